import { CATEGORIES } from '../../catalogue/categories.js';
import type { settingsView } from '../../settings/settings.js';
import { decimal, money } from '../format.js';
import { html, type SafeHtml } from '../html.js';

type SettingsView = ReturnType<typeof settingsView>;

/**
 * The organisation's settings to read, for those who may not change them (an analyst): the page
 * frame leaves the settings form out for them (read-only.ts withoutChangeForms), and the panel would
 * otherwise be empty.
 */
export function settingsFacts(s: SettingsView): SafeHtml {
  const rates = s.category_hourly_rates as Record<string, number | undefined>;
  const perCategory = CATEGORIES.flatMap((c) => {
    const rate = rates[c];
    return rate === undefined ? [] : [`${c} ${money(rate, s.currency)}`];
  });
  const row = (label: string, value: SafeHtml | string) =>
    html`<tr>
      <th scope="row">${label}</th>
      <td>${value}</td>
    </tr>`;
  const muted = (text: string) => html`<span class="muted">${text}</span>`;
  return html`<div class="table-wrap">
    <table class="fields" id="settings-facts">
      <tbody>
        ${row('Name', s.name)} ${row('Currency', s.currency)}
        ${row('Default hourly rate', `${money(s.default_hourly_rate, s.currency)} / h`)}
        ${row('Hourly rate per category', perCategory.length === 0 ? muted('The default rate for every category') : perCategory.join(', '))}
        ${row(
          'Outcome credit',
          `success ${decimal(s.outcome_credit.success)}, needs review ${decimal(s.outcome_credit.needs_review)}, failure ${decimal(s.outcome_credit.failure)}`,
        )}
        ${row(
          'Fallback baseline',
          s.fallback_baseline_minutes === null
            ? muted('Off (unknown task types are refused)')
            : `${decimal(s.fallback_baseline_minutes)} minutes`,
        )}
        ${row(
          `USD to ${s.currency} rate`,
          s.usd_exchange_rate === null ? muted('The shipped reference rates') : decimal(s.usd_exchange_rate),
        )}
        ${row('Admin e-mails', s.admin_emails.length === 0 ? muted('None') : s.admin_emails.join(', '))}
      </tbody>
    </table>
  </div>`;
}
