import { html, type SafeHtml } from '../html.js';
import { MIN_PASSWORD_LENGTH } from '../passwords.js';
import { csrfField, renderPage } from './layout.js';

const errorNotice = (error: string | undefined) => (error ? html`<div class="notice error" role="alert" id="form-error">${error}</div>` : '');

const describedBy = (error: string | undefined) => (error ? html` aria-describedby="form-error"` : '');

export interface SetupFormValues {
  email?: string;
  error?: string;
}

/** The one-time setup page of a fresh installation: setup code, email, password twice. */
export function setupPage(csrf: string, values: SetupFormValues = {}): string {
  const body: SafeHtml = html`<div class="card narrow">
  <h1>Set up Cutout</h1>
  <p class="muted">Create the account that owns this installation's tokens. The setup code is in the server's log, on the line that starts with <q>No account yet</q>.</p>
  ${errorNotice(values.error)}
  <form method="post" action="/dashboard/setup"${describedBy(values.error)}>
    ${csrfField(csrf)}
    <div class="field"><label for="setup-code">Setup code</label>
      <input type="text" id="setup-code" name="setup_code" required autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" placeholder="XXXX-XXXX-XXXX" autofocus></div>
    <div class="field"><label for="email">Email</label>
      <input type="email" id="email" name="email" required autocomplete="username" value="${values.email ?? ''}"></div>
    <div class="field"><label for="password">Password <span class="hint">At least ${MIN_PASSWORD_LENGTH} characters.</span></label>
      <input type="password" id="password" name="password" required minlength="${MIN_PASSWORD_LENGTH}" autocomplete="new-password"></div>
    <div class="field"><label for="password-again">Password again</label>
      <input type="password" id="password-again" name="password_again" required minlength="${MIN_PASSWORD_LENGTH}" autocomplete="new-password"></div>
    <button class="button" type="submit">Create account</button>
  </form>
</div>`;
  return renderPage({ title: 'Set up', csrf, body });
}

export interface SignInFormValues {
  email?: string;
  error?: string;
  notice?: string;
}

export function signInPage(csrf: string, values: SignInFormValues = {}): string {
  const body = html`<div class="card narrow">
  <h1>Sign in</h1>
  <p class="muted">The token dashboard of this Cutout installation.</p>
  ${values.notice ? html`<div class="notice ok" role="status">${values.notice}</div>` : ''}
  ${errorNotice(values.error)}
  <form method="post" action="/dashboard/sign-in"${describedBy(values.error)}>
    ${csrfField(csrf)}
    <div class="field"><label for="email">Email</label>
      <input type="email" id="email" name="email" required autocomplete="username" value="${values.email ?? ''}"${values.email ? '' : html` autofocus`}></div>
    <div class="field"><label for="password">Password</label>
      <input type="password" id="password" name="password" required autocomplete="current-password"${values.email ? html` autofocus` : ''}></div>
    <button class="button" type="submit">Sign in</button>
  </form>
</div>`;
  return renderPage({ title: 'Sign in', csrf, body });
}
