//! The Möbius mark: a single looping band, drawn in the accent colour.

export function BrandMark({ size = 28, className }: { size?: number; className?: string }) {
  return (
    <svg
      className={className}
      width={size}
      height={size}
      viewBox="0 0 32 32"
      aria-hidden="true"
      focusable="false"
    >
      <rect width="32" height="32" rx="9" fill="var(--accent)" />
      <path
        d="M5.5 16c0-3.9 5.2-3.9 10.5 0s10.5 3.9 10.5 0-5.2-3.9-10.5 0-10.5 3.9-10.5 0Z"
        fill="none"
        stroke="var(--on-accent)"
        strokeWidth="2.6"
        strokeLinejoin="round"
      />
    </svg>
  );
}
