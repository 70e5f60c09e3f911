import { request, type Answer } from './http.js';

/**
 * A browser's side of the dashboard, reduced to what the cluster run needs: cookies kept
 * across answers (from any replica: they are the same installation), and each form's CSRF
 * token read from its page.
 */
export class DashboardClient {
  readonly #cookies = new Map<string, string>();

  async send(origin: string, method: 'GET' | 'POST', path: string, form?: Record<string, string>): Promise<Answer> {
    const headers: Record<string, string> = {};
    if (this.#cookies.size) headers.cookie = [...this.#cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const answer = await request(origin, method, path, { headers, body: form ? new URLSearchParams(form).toString() : undefined });
    const setCookie = answer.headers['set-cookie'];
    for (const cookie of Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : []) {
      const [pair] = cookie.split(';');
      const [name, value] = pair.split('=', 2);
      if (!value || /expires=Thu, 01 Jan 1970/i.test(cookie)) this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
    return answer;
  }

  /** Loads `page` at `origin` and posts its form to `action` with the page's CSRF token. */
  async submit(origin: string, page: string, action: string, form: Record<string, string>): Promise<Answer> {
    const loaded = await this.send(origin, 'GET', page);
    const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(loaded.body.toString())?.[1];
    if (!csrf) throw new Error(`GET ${page} at ${origin} answered ${loaded.status} without a CSRF token`);
    return this.send(origin, 'POST', action, { _csrf: csrf, ...form });
  }
}
