import { describe, expect, it } from 'vitest';
import { html, raw } from '../../src/dashboard/html.js';
import { withoutChangeForms } from '../../src/dashboard/read-only.js';

// What an analyst's page keeps of a body: the rule of read-only.ts on small pieces of markup.

const read = (text: string) => withoutChangeForms(raw(text)).text.replace(/\s+/g, ' ').trim();

describe('withoutChangeForms', () => {
  it('leaves out a panel marked data-change whole, the sections nested in it counted', () => {
    const body = `<section class="panel"><h2>Facts</h2></section>
      <section class="panel" data-change><h2>Override</h2><p>How to.</p>
        <section><h3>Inner</h3></section><p>After the inner part.</p></section>
      <section class="panel"><h2>History</h2></section>`;
    expect(read(body)).toBe(
      '<section class="panel"><h2>Facts</h2></section> <section class="panel"><h2>History</h2></section>',
    );
  });

  it('leaves out a line and the cells of a column of buttons, keeping the rest', () => {
    const body = `<p>No budgets yet.<span data-change> Add one below.</span></p>
      <table><tr><th>Name</th><th data-change>Actions</th></tr>
      <tr><td>Licence</td><td data-change><form method="post" action="/x"><button>Delete</button></form></td></tr></table>`;
    expect(read(body)).toBe(
      '<p>No budgets yet.</p> <table><tr><th>Name</th></tr> <tr><td>Licence</td></tr></table>',
    );
  });

  it('takes the attribute for the mark, never a value that spells it', () => {
    const value = 'x" data-change "y';
    const body = html`<p title="${value}">Kept</p>
      <input name="description" value="${value}" />
      <p class="data-change">Kept too</p>`.text;
    expect(read(body)).toBe(body.replace(/\s+/g, ' ').trim());
  });

  it('still leaves out the forms that post and keeps the account and sign-out forms', () => {
    const body = `<form method="post" action="/dashboard/webhooks"><button>Add</button></form>
      <form method="get" action="/dashboard/restatements/preview" data-change><h3>Change from a past date</h3></form>
      <form method="post" action="/dashboard/account/password"><button>Change password</button></form>
      <form method="get" action="/dashboard/reports"><button>Show</button></form>`;
    expect(read(body)).toBe(
      '<form method="post" action="/dashboard/account/password"><button>Change password</button></form> <form method="get" action="/dashboard/reports"><button>Show</button></form>',
    );
  });

  it('leaves out the rest of the body after a marked element never closed, rather than a part of it', () => {
    expect(read('<p>Kept</p><section data-change><h2>Open</h2><p>Never closed</p>')).toBe('<p>Kept</p>');
  });
});
