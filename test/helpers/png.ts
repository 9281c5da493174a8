/**
 * Just enough of a PNG reader to look at a browser's screenshot: 8-bit RGB or RGBA, not interlaced (what Chromium's
 * --screenshot writes). Decodes the pixels (zlib, then the five scanline filters of the PNG specification) so a test
 * can ask which colours the page shows, not only that a file exists.
 */
import { inflateSync } from 'node:zlib';

export interface Png {
  width: number;
  height: number;
  /** RGB per pixel, row by row (alpha dropped). */
  rgb: Uint8Array;
}

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function readPng(file: Buffer): Png {
  if (!file.subarray(0, 8).equals(SIGNATURE)) throw new Error('not a PNG file');
  let at = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  while (at < file.length) {
    const length = file.readUInt32BE(at);
    const type = file.toString('latin1', at + 4, at + 8);
    const data = file.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const [depth, colour, , , interlace] = [data[8], data[9], data[10], data[11], data[12]];
      if (depth !== 8 || interlace !== 0 || (colour !== 2 && colour !== 6))
        throw new Error(`unsupported PNG: depth ${depth}, colour type ${colour}, interlace ${interlace}`);
      channels = colour === 6 ? 4 : 3;
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = new Uint8Array(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const out = y * stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? pixels[out + x - channels]! : 0;
      const b = y > 0 ? pixels[out - stride + x]! : 0;
      const c = x >= channels && y > 0 ? pixels[out - stride + x - channels]! : 0;
      let v = line[x]!;
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      } else if (filter !== 0) throw new Error(`bad PNG filter ${filter} on row ${y}`);
      pixels[out + x] = v & 0xff;
    }
  }
  if (channels === 3) return { width, height, rgb: pixels };
  const rgb = new Uint8Array(width * height * 3);
  for (let i = 0, j = 0; i < pixels.length; i += 4, j += 3) rgb.set(pixels.subarray(i, i + 3), j);
  return { width, height, rgb };
}

/** How many pixels are within `tolerance` (per channel) of the colour `#rrggbb`. */
export function countColour(png: Png, hex: string, tolerance = 24): number {
  const want = [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16));
  let n = 0;
  for (let i = 0; i < png.rgb.length; i += 3) {
    if (
      Math.abs(png.rgb[i]! - want[0]!) <= tolerance &&
      Math.abs(png.rgb[i + 1]! - want[1]!) <= tolerance &&
      Math.abs(png.rgb[i + 2]! - want[2]!) <= tolerance
    )
      n++;
  }
  return n;
}

/** Rows (y) that hold at least one pixel different from the background colour of the top-left pixel. */
export function inkRows(png: Png): number {
  const bg = png.rgb.subarray(0, 3);
  let rows = 0;
  for (let y = 0; y < png.height; y++) {
    const row = png.rgb.subarray(y * png.width * 3, (y + 1) * png.width * 3);
    for (let i = 0; i < row.length; i += 3) {
      if (row[i] !== bg[0] || row[i + 1] !== bg[1] || row[i + 2] !== bg[2]) {
        rows++;
        break;
      }
    }
  }
  return rows;
}
