// Draws the Möbius PNG icons (public/icons/*) with no dependencies: the same looping band as
// public/favicon.svg, rasterised with distance-based anti-aliasing and written as RGBA PNG.
// Run: npm run icons (the output is committed; the build does not run this).

import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { deflateSync } from "node:zlib";

const OUT = join(dirname(fileURLToPath(import.meta.url)), "..", "public", "icons");
const ACCENT = [0x4f, 0x46, 0xe5];
const WHITE = [0xff, 0xff, 0xff];

// The band in the favicon's 32-unit space: four cubic segments meeting at the centre (16, 16).
const SEGMENTS = [
  [[5.5, 16], [5.5, 12.1], [10.7, 12.1], [16, 16]],
  [[16, 16], [21.3, 19.9], [26.5, 19.9], [26.5, 16]],
  [[26.5, 16], [26.5, 12.1], [21.3, 12.1], [16, 16]],
  [[16, 16], [10.7, 19.9], [5.5, 19.9], [5.5, 16]],
];

function cubic([p0, p1, p2, p3], t) {
  const u = 1 - t;
  const a = u * u * u, b = 3 * u * u * t, c = 3 * u * t * t, d = t * t * t;
  return [a * p0[0] + b * p1[0] + c * p2[0] + d * p3[0], a * p0[1] + b * p1[1] + c * p2[1] + d * p3[1]];
}

function polyline(steps = 96) {
  const points = [];
  for (const segment of SEGMENTS) for (let i = 0; i < steps; i++) points.push(cubic(segment, i / steps));
  points.push(points[0]);
  return points;
}

function distanceToSegment(px, py, [ax, ay], [bx, by]) {
  const dx = bx - ax, dy = by - ay;
  const t = Math.max(0, Math.min(1, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy || 1)));
  return Math.hypot(px - (ax + t * dx), py - (ay + t * dy));
}

// Signed distance to a rounded square centred in a size×size canvas (negative inside).
function roundedSquare(px, py, size, radius) {
  const half = size / 2;
  const qx = Math.abs(px - half) - (half - radius);
  const qy = Math.abs(py - half) - (half - radius);
  return Math.hypot(Math.max(qx, 0), Math.max(qy, 0)) + Math.min(Math.max(qx, qy), 0) - radius;
}

const coverage = (signedDistance) => Math.max(0, Math.min(1, 0.5 - signedDistance));

/**
 * size: pixels; cornerRadius: 0 for full-bleed; markScale: band width as a share of the icon.
 */
function render(size, { cornerRadius, markScale }) {
  const pixels = new Uint8Array(size * size * 4);
  const unit = (size * markScale) / 21; // the band spans 21 units (5.5 → 26.5)
  const offset = size / 2 - 16 * unit;
  const path = polyline().map(([x, y]) => [x * unit + offset, y * unit + offset]);
  // A touch bolder than the favicon's 2.6-unit stroke, so the band reads at launcher sizes.
  const halfStroke = 1.5 * unit;
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const px = x + 0.5, py = y + 0.5;
      const background = cornerRadius > 0 ? coverage(roundedSquare(px, py, size, cornerRadius)) : 1;
      let nearest = Infinity;
      for (let i = 0; i < path.length - 1; i++) nearest = Math.min(nearest, distanceToSegment(px, py, path[i], path[i + 1]));
      const band = coverage(nearest - halfStroke) * background;
      const index = (y * size + x) * 4;
      for (let c = 0; c < 3; c++) pixels[index + c] = Math.round(ACCENT[c] * (1 - band) + WHITE[c] * band);
      pixels[index + 3] = Math.round(background * 255);
    }
  }
  return pixels;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes) {
  let c = 0xffffffff;
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type, data) {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

function encodePng(size, rgba) {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header[8] = 8; // bit depth
  header[9] = 6; // RGBA
  const rows = Buffer.alloc(size * (size * 4 + 1));
  for (let y = 0; y < size; y++) {
    rows[y * (size * 4 + 1)] = 0; // filter: none
    Buffer.from(rgba.buffer, y * size * 4, size * 4).copy(rows, y * (size * 4 + 1) + 1);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(rows, { level: 9 })),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

const ICONS = [
  // "any" icons: rounded square on transparency, like the favicon.
  { file: "icon-192.png", size: 192, cornerRadius: 192 * 0.22, markScale: 0.7 },
  { file: "icon-512.png", size: 512, cornerRadius: 512 * 0.22, markScale: 0.7 },
  // Maskable: full bleed, the band inside the central safe circle (radius 40%).
  { file: "icon-maskable-512.png", size: 512, cornerRadius: 0, markScale: 0.56 },
  // iOS rounds the corners itself.
  { file: "apple-touch-icon.png", size: 180, cornerRadius: 0, markScale: 0.66 },
];

mkdirSync(OUT, { recursive: true });
for (const { file, size, ...shape } of ICONS) {
  writeFileSync(join(OUT, file), encodePng(size, render(size, shape)));
  console.log(`wrote public/icons/${file} (${size}×${size})`);
}
