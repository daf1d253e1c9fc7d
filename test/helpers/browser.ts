/**
 * A real browser for the dashboard tests: Debian's Chromium (installed by .ci/run) driven by
 * playwright-core. No browser is downloaded: this machine reaches only package registries.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { chromium, type Browser } from 'playwright-core';
import { PROJECT_ROOT } from '../../src/paths.js';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Screenshots of each page at each width, for people to look at after a run. */
export const SCREENSHOT_DIR = path.join(PROJECT_ROOT, 'test-output', 'dashboard');
/** The screenshots the docs show: the browser tests take them from their seeded install and write them here with DOCS_IMAGES=1 (npm run docs:images). */
export const DOCS_IMAGE_DIR = path.join(PROJECT_ROOT, 'docs', 'images');

export const VIEWPORTS = { wide: { width: 1280, height: 900 }, phone: { width: 390, height: 844 } } as const;

export async function launchBrowser(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM_PATH)) {
    throw new Error(`no Chromium at ${CHROMIUM_PATH}: install Debian's package (apt-get install chromium; .ci/run does) or set CHROMIUM_PATH`);
  }
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
  });
}

/** RGBA pixels of an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium's screenshots are). */
export function decodePng(png: Buffer): { width: number; height: number; rgba: Uint8Array } {
  if (png.readUInt32BE(0) !== 0x89504e47) throw new Error('not a PNG');
  let offset = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  while (offset < png.length) {
    const length = png.readUInt32BE(offset);
    const type = png.toString('latin1', offset + 4, offset + 8);
    const data = png.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const [depth, colour, , , interlace] = [data[8], data[9], data[10], data[11], data[12]];
      if (depth !== 8 || (colour !== 2 && colour !== 6) || interlace !== 0) throw new Error(`unsupported PNG: depth ${depth}, colour ${colour}, interlace ${interlace}`);
      channels = colour === 6 ? 4 : 3;
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    offset += 12 + length;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = new Uint8Array(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = y * stride;
    const up = row - stride;
    // One loop per filter type: a branch per line, not per byte (a full page is millions of bytes).
    if (filter === 0) pixels.set(line, row);
    else if (filter === 1) for (let x = 0; x < stride; x++) pixels[row + x] = (line[x]! + (x >= channels ? pixels[row + x - channels]! : 0)) & 0xff;
    else if (filter === 2) for (let x = 0; x < stride; x++) pixels[row + x] = (line[x]! + (y > 0 ? pixels[up + x]! : 0)) & 0xff;
    else if (filter === 3) {
      for (let x = 0; x < stride; x++) pixels[row + x] = (line[x]! + (((x >= channels ? pixels[row + x - channels]! : 0) + (y > 0 ? pixels[up + x]! : 0)) >> 1)) & 0xff;
    } else if (filter === 4) {
      for (let x = 0; x < stride; x++) {
        const a = x >= channels ? pixels[row + x - channels]! : 0;
        const b = y > 0 ? pixels[up + x]! : 0;
        const c = x >= channels && y > 0 ? pixels[up + x - channels]! : 0;
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        pixels[row + x] = (line[x]! + (pa <= pb && pa <= pc ? a : pb <= pc ? b : c)) & 0xff;
      }
    } else throw new Error(`PNG: unknown filter ${filter} on line ${y}`);
  }
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    rgba[i * 4] = pixels[i * channels]!;
    rgba[i * 4 + 1] = pixels[i * channels + 1]!;
    rgba[i * 4 + 2] = pixels[i * channels + 2]!;
    rgba[i * 4 + 3] = channels === 4 ? pixels[i * channels + 3]! : 255;
  }
  return { width, height, rgba };
}

/**
 * How much a screenshot shows: the share of pixels unlike the most common colour (the background),
 * and how many distinct colours there are. A blank or failed render is one colour, or nearly.
 */
export function renderStats(png: Buffer): { width: number; height: number; inkShare: number; colours: number } {
  const { width, height, rgba } = decodePng(png);
  const counts = new Map<number, number>();
  // Counted by runs of one colour: a page is mostly long runs, so the map is touched at each change.
  let run = -1;
  let length = 0;
  for (let i = 0; i < rgba.length; i += 4) {
    const colour = (rgba[i]! << 16) | (rgba[i + 1]! << 8) | rgba[i + 2]!;
    if (colour === run) length++;
    else {
      if (length > 0) counts.set(run, (counts.get(run) ?? 0) + length);
      run = colour;
      length = 1;
    }
  }
  if (length > 0) counts.set(run, (counts.get(run) ?? 0) + length);
  const background = Math.max(...counts.values());
  return { width, height, inkShare: 1 - background / (width * height), colours: counts.size };
}
