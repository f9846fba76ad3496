import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The README and every page of docs/, as paths from the repository root. */
export const PAGES = [
  'README.md',
  ...readdirSync(`${ROOT}docs`)
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];

export const read = (page: string) => readFileSync(`${ROOT}${page}`, 'utf8');

export interface CodeBlock {
  page: string;
  /** 1-based line of the opening fence. */
  line: number;
  language: string;
  code: string;
  /** The reason given by `<!-- example: not run: REASON -->` just above the block, if any. */
  notRun: string | null;
}

const NOT_RUN = /^<!-- example: not run: (.*) -->$/;

/** Every fenced block of a page, with the not-run marker that precedes it. */
export function codeBlocks(page: string): CodeBlock[] {
  const lines = read(page).split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)/.exec(lines[i] ?? '');
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith('```'));
    if (end < 0) throw new Error(`${page}:${i + 1}: unclosed code block`);
    let above = i - 1;
    while (above >= 0 && (lines[above] ?? '').trim() === '') above--;
    const marker = NOT_RUN.exec((lines[above] ?? '').trim());
    blocks.push({
      page,
      line: i + 1,
      language: open[1] ?? '',
      code: lines.slice(i + 1, end).join('\n'),
      notRun: marker ? (marker[1] ?? '').trim() : null,
    });
    i = end;
  }
  return blocks;
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens. */
export function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a page's headings (outside code blocks). */
export function anchors(page: string): Set<string> {
  const found = new Set<string>();
  let inCode = false;
  for (const line of read(page).split('\n')) {
    if (line.startsWith('```')) inCode = !inCode;
    const heading = /^#{1,6} (.+)$/.exec(line);
    if (!inCode && heading) found.add(slug(heading[1] ?? ''));
  }
  return found;
}
