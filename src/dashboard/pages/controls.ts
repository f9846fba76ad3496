import { PERIODS, type Period } from '../../reports/params.js';
import { html, type SafeHtml } from '../html.js';

/** Period links; the other query parameters of the view are kept. */
export function periodPicker(path: string, current: Period, keep: URLSearchParams): SafeHtml {
  const links = PERIODS.map((p) => {
    const q = new URLSearchParams(keep);
    q.set('period', p);
    return html`<a
      class="seg"
      href="${path}?${q.toString()}"
      ${p === current ? html` aria-current="true"` : ''}
      >${p}</a
    >`;
  });
  return html`<div class="segmented" role="group" aria-label="Period">${links}</div>`;
}

export function select(input: {
  id: string;
  name: string;
  label: string;
  options: ReadonlyArray<readonly [value: string, label: string]>;
  value: string;
}): SafeHtml {
  return html`<div class="field">
    <label for="${input.id}">${input.label}</label>
    <select id="${input.id}" name="${input.name}">
      ${input.options.map(
        ([value, label]) =>
          html`<option value="${value}" ${value === input.value ? html` selected` : ''}>${label}</option>`,
      )}
    </select>
  </div>`;
}

export function textField(input: {
  id: string;
  name: string;
  label: string;
  value?: string;
  type?: string;
  required?: boolean;
  hint?: string;
  attrs?: SafeHtml;
  /** A whole row of the form (a URL is long). */
  wide?: boolean;
}): SafeHtml {
  return html`<div class="${input.wide ? 'field wide' : 'field'}">
    <label for="${input.id}">${input.label}</label>
    <input
      id="${input.id}"
      name="${input.name}"
      type="${input.type ?? 'text'}"
      value="${input.value ?? ''}"
      ${input.required ? html`required` : ''}
      ${input.hint ? html`aria-describedby="${input.id}-hint"` : ''}
      ${input.attrs ?? ''}
    />
    ${input.hint ? html`<small id="${input.id}-hint" class="muted">${input.hint}</small>` : ''}
  </div>`;
}
