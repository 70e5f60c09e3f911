import { OPTIONS, optionsOf, type OptionName } from '../../options/option-table.js';
import { html, type SafeHtml } from '../html.js';

/**
 * "More options": a control for each native option of the option table that the page has no
 * control of its own for, so that an option added to the table can be used at once: a menu
 * of its words, Yes or No for a switch, else its text. Empty is the server's default, and is
 * not sent. Each control carries `data-option="<name>"`, which the page's script reads
 * (`optionControlValues` in the browser script). Try-it and Batch both show it.
 *
 * @example moreOptions('batch', ['format']) // #batch-more, holding #batch-option-crop, #batch-option-bg-color, …
 */
export function moreOptions(page: string, own: readonly OptionName[]): SafeHtml {
  const controls = optionsOf('native')
    .filter((name) => !own.includes(name))
    .map((name) => {
      const { kind, description, example } = OPTIONS[name];
      const id = `${page}-option-${name.replaceAll('_', '-')}`;
      const words = 'words' in kind ? (kind.words as readonly string[]) : kind.flag === 'boolean' ? ['true', 'false'] : undefined;
      const control = words
        ? html`<select id="${id}" data-option="${name}" title="${description}"><option value="">Default</option>${words.map((word) => html`<option value="${word}">${word}</option>`)}</select>`
        : html`<input type="text" id="${id}" data-option="${name}" title="${description}" placeholder="${example ?? ''}" autocomplete="off">`;
      return html`<label>${name} ${control}</label>`;
    });
  return html`<details class="more-options" id="${page}-more"><summary>More options</summary>${controls}<p class="hint">The API's names and values (docs/api.md); hover a field for what it does.</p></details>`;
}
