import type { OrgCtx } from '../context.js';
import { listTaskTypes } from '../catalogue/task-types.js';
import type { TaskTypeRecord } from '../catalogue/view.js';
import { html, type SafeHtml } from './html.js';

/** A key that may break after its underscores, not mid-word, in a narrow column. */
export function breakableKey(key: string): SafeHtml {
  const parts = key.split('_');
  return html`${parts.map((p, i) => (i < parts.length - 1 ? html`${p}_<wbr />` : p))}`;
}

/**
 * Task types as people name them. Events and reports carry the key (`support_ticket_resolution`),
 * which is what the API, the CSV and the filters speak; the pages lead with the display name
 * ("Resolve a ticket end to end") and keep the key beside it. A key the catalogue does not know
 * (tracked with the fallback baseline) has no other name than itself.
 */
export class TaskTypeNames {
  private constructor(private readonly byKey: ReadonlyMap<string, TaskTypeRecord>) {}

  /** Built-ins, custom types and archived ones: past events keep their archived type's name. */
  static async load(ctx: OrgCtx): Promise<TaskTypeNames> {
    return TaskTypeNames.of(await listTaskTypes({ ctx, input: { includeArchived: true } }));
  }

  static of(types: readonly TaskTypeRecord[]): TaskTypeNames {
    return new TaskTypeNames(new Map(types.map((t) => [t.key, t])));
  }

  record(key: string): TaskTypeRecord | undefined {
    return this.byKey.get(key);
  }

  /** The display name, or the key itself when the catalogue has none. */
  name(key: string): string {
    return this.byKey.get(key)?.display_name ?? key;
  }

  /** The name, and under it the key in code type (and "archived" where it is). */
  cell(key: string | null): SafeHtml {
    if (key === null) return html`<span class="muted">(none)</span>`;
    const t = this.byKey.get(key);
    if (!t) return html`<code class="tt-key only">${breakableKey(key)}</code>`;
    return html`<span class="tt-name">${t.display_name}</span>
      <span class="tt-key"
        ><code>${breakableKey(key)}</code
        >${t.status === 'archived' ? html` · <span class="muted">archived</span>` : ''}</span
      >`;
  }

  /** Every type for a filter field's suggestions: the key is what the filter takes. */
  datalist(id: string): SafeHtml {
    return html`<datalist id="${id}">
      ${[...this.byKey.values()].map((t) => html`<option value="${t.key}">${t.display_name}</option>`)}
    </datalist>`;
  }
}
