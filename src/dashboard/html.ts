/** Markup that is already safe: produced by `html` or `raw` and inserted as is. */
export class SafeHtml {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

type Interpolation = SafeHtml | string | number | boolean | null | undefined | readonly Interpolation[];

function render(value: Interpolation): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map((v: Interpolation) => render(v)).join('');
  return escapeHtml(String(value));
}

/**
 * Escaping by default: every interpolated value is escaped unless it is `SafeHtml` (the result
 * of another `html` template). Agent ids, task names, metadata and webhook response bodies are
 * attacker-controlled, so nothing reaches the page unescaped by accident.
 */
export function html(strings: TemplateStringsArray, ...values: Interpolation[]): SafeHtml {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '');
  return new SafeHtml(out);
}

/** Trusted markup written in the project (never user input). */
export function raw(text: string): SafeHtml {
  return new SafeHtml(text);
}
