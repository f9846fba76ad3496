import { SafeHtml } from './html.js';

// What an analyst's pages leave out: every control that changes something, and every panel or
// line whose only purpose is such a control. The verbs refuse the change anyway
// (accounts/authorize.ts requireRole); this only keeps the pages free of what the reader cannot use.

/** Forms an analyst keeps: their own account, sessions and organisation, signing out. */
const ALWAYS_ALLOWED_ACTIONS = /^\/dashboard\/(logout|account)(\/|"|$)/;
/** A form that posts, or one marked `data-change`: a GET form that opens a change (its preview). */
const CHANGE_FORM = /<form\b[^>]*\b(?:method="post"|data-change\b)[^>]*>[\s\S]*?<\/form>/g;
/**
 * An opening tag, its attributes apart. Interpolated values are escaped (html.ts), so a `>` or a
 * `"` inside a value never ends the tag or the value early.
 */
const OPENING_TAG = /<([a-z][a-z0-9]*)((?:\s+[a-z][\w:-]*(?:="[^"]*")?)*)\s*>/g;
/**
 * A change panel: any element other than a form marked `data-change` — a `<section>` whose only
 * purpose is a change (its heading, instructions and forms), a line of instructions, the cells of
 * a column of buttons. It is left out whole, to its matching end tag (elements of the same name
 * nested in it are counted). The attribute, not a value that contains its name, marks it.
 */
const isChangePanel = (tag: string, attributes: string) =>
  tag !== 'form' && /\sdata-change(?=[\s=]|$)/.test(attributes.replace(/="[^"]*"/g, ''));

/** Where the element whose opening tag ends at `from` ends: after its matching closing tag. */
function endOf(text: string, tag: string, from: number): number {
  const tags = new RegExp(`<(/?)${tag}\\b[^>]*>`, 'g');
  tags.lastIndex = from;
  let depth = 1;
  for (let m = tags.exec(text); m; m = tags.exec(text)) {
    depth += m[1] === '/' ? -1 : 1;
    if (depth === 0) return tags.lastIndex;
  }
  // Unclosed (never written so): leave out the rest rather than show a part of it.
  return text.length;
}

function withoutChangePanels(text: string): string {
  let out = '';
  let kept = 0;
  const tags = new RegExp(OPENING_TAG.source, 'g');
  for (let m = tags.exec(text); m; m = tags.exec(text)) {
    const [, tag = '', attributes = ''] = m;
    if (!isChangePanel(tag, attributes)) continue;
    out += text.slice(kept, m.index);
    kept = endOf(text, tag, tags.lastIndex);
    tags.lastIndex = kept;
  }
  return out + text.slice(kept);
}

/**
 * A page body without the change panels, then without the forms that change something: what an
 * analyst sees. Forms are never nested in the dashboard's markup, so a form ends at its first
 * `</form>`.
 */
export function withoutChangeForms(body: SafeHtml): SafeHtml {
  return new SafeHtml(
    withoutChangePanels(body.text).replace(CHANGE_FORM, (form) => {
      const action = /\baction="([^"]*)"/.exec(form)?.[1] ?? '';
      return ALWAYS_ALLOWED_ACTIONS.test(action) ? form : '';
    }),
  );
}
