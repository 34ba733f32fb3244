//! The wait while boot checks run. It fades in only after a short delay, so a fast server
//! never flashes it.

import { BrandMark } from "../ui/BrandMark";

export function Splash() {
  return (
    <div className="splash" role="status" aria-label="Loading Möbius">
      <BrandMark size={56} className="splash-mark" />
    </div>
  );
}
