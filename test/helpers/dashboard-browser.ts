import { expect } from 'vitest';
import type { DashboardApp } from '../browser/dashboard-app.js';

type Injected = Awaited<ReturnType<DashboardApp['app']['inject']>>;

/** A browser's cookies for one test: kept from Set-Cookie, sent back with every request. */
export class Browser {
  readonly cookies = new Map<string, string>();
  constructor(readonly t: DashboardApp) {}

  async request(method: 'GET' | 'POST', url: string, options: { form?: Record<string, string>; headers?: Record<string, string>; body?: Buffer } = {}): Promise<Injected> {
    const headers: Record<string, string> = { ...options.headers };
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    let payload: string | Buffer | undefined = options.body;
    if (options.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      payload = new URLSearchParams(options.form).toString();
    }
    const response = await this.t.app.inject({ method, url, headers, payload });
    for (const cookie of response.cookies as { name: string; value: string; expires?: Date }[]) {
      if (cookie.value === '' || (cookie.expires && cookie.expires.getTime() < Date.now())) this.cookies.delete(cookie.name);
      else this.cookies.set(cookie.name, cookie.value);
    }
    return response;
  }

  /** Loads a page and returns its CSRF token, as the page's forms would send it. */
  async csrf(url: string): Promise<string> {
    const page = await this.request('GET', url);
    expect(page.statusCode, page.body).toBe(200);
    const token = /<meta name="csrf-token" content="([^"]+)">/.exec(page.body)?.[1];
    expect(token).toBeTruthy();
    return token!;
  }

  async submit(pageUrl: string, action: string, form: Record<string, string>): Promise<Injected> {
    return this.request('POST', action, { form: { _csrf: await this.csrf(pageUrl), ...form } });
  }
}
