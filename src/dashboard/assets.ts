import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The dashboard's own files. Under tsx they sit beside this module; `tsc` does not copy them to
 * dist/, so the built service reads them from src/dashboard/assets of the same checkout.
 */
function assetDirectory(): string {
  const here = fileURLToPath(new URL('./assets/', import.meta.url));
  if (existsSync(here)) return here;
  return fileURLToPath(new URL('../../src/dashboard/assets/', import.meta.url));
}

const TYPES: Record<string, string> = {
  'dashboard.css': 'text/css; charset=utf-8',
  'dashboard.js': 'text/javascript; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
};

export interface Asset {
  type: string;
  body: Buffer;
}

/** Read once at start-up: a handful of small files. */
export function loadAssets(): Map<string, Asset> {
  const dir = assetDirectory();
  const assets = new Map<string, Asset>();
  for (const [name, type] of Object.entries(TYPES)) {
    assets.set(name, { type, body: readFileSync(`${dir}${name}`) });
  }
  return assets;
}
