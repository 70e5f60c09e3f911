import { describe, expect, it } from 'vitest';
import { MemoryAttemptThrottle } from '../src/dashboard/attempt-throttle.js';
import { html } from '../src/dashboard/html.js';
import { hashPassword, passwordProblem, verifyPassword } from '../src/dashboard/passwords.js';
import { generateSetupCode, SetupCode } from '../src/dashboard/setup-code.js';
import { usageChart } from '../src/dashboard/usage-chart.js';
import { errorRate, lastDays, summarizeUsage } from '../src/dashboard/usage-summary.js';

describe('html', () => {
  it('escapes interpolated text, keeps nested fragments and flattens lists', () => {
    const name = '<img src=x onerror="alert(1)">&\'';
    expect(html`<td title="${name}">${name}</td>`.text).toBe('<td title="&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;&#39;">&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;&#39;</td>');
    expect(html`<ul>${['a', 'b'].map((x) => html`<li>${x}</li>`)}</ul>`.text).toBe('<ul><li>a</li><li>b</li></ul>');
    expect(html`${null}${undefined}${false}${0}`.text).toBe('0');
  });
});

describe('passwords', () => {
  it('hashes with scrypt and a fresh salt; verifies the right password only', async () => {
    const [a, b] = await Promise.all([hashPassword('correct horse battery'), hashPassword('correct horse battery')]);
    expect(a).toMatch(/^scrypt\$32768\$8\$3\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('horse');
    await expect(verifyPassword('correct horse battery', a)).resolves.toBe(true);
    await expect(verifyPassword('correct horse batterY', a)).resolves.toBe(false);
    await expect(verifyPassword('correct horse battery', 'plain text')).resolves.toBe(false);
    // The same text composed differently is the same password.
    const composed = await hashPassword('caf\u00e9 au lait!!');
    await expect(verifyPassword('cafe\u0301 au lait!!', composed)).resolves.toBe(true);
  });

  it('asks for at least 10 characters', () => {
    expect(passwordProblem('123456789')).toMatch(/at least 10/);
    expect(passwordProblem('1234567890')).toBeUndefined();
  });
});

describe('MemoryAttemptThrottle', () => {
  it('blocks a key after its allowance of failures until the window ends; reset forgets', async () => {
    let now = 0;
    const throttle = new MemoryAttemptThrottle({ maxFailures: 3, windowMs: 1000, now: () => now });
    for (let i = 0; i < 3; i++) {
      expect(await throttle.blockedFor('a')).toBe(0);
      await throttle.fail('a');
    }
    now = 400;
    expect(await throttle.blockedFor('a')).toBe(600);
    expect(await throttle.blockedFor('b')).toBe(0);
    now = 1000;
    expect(await throttle.blockedFor('a')).toBe(0);
    await throttle.fail('a');
    await throttle.fail('a');
    await throttle.fail('a');
    expect(await throttle.blockedFor('a')).toBeGreaterThan(0);
    await throttle.reset('a');
    expect(await throttle.blockedFor('a')).toBe(0);
  });
});

describe('SetupCode', () => {
  it('is 12 unambiguous characters in groups, matched loosely and only until used', async () => {
    const consumed: string[] = [];
    const code = new SetupCode(generateSetupCode(), async (used) => (consumed.push(used), true));
    expect(code.value).toMatch(/^[A-HJKMNP-Z2-9]{4}-[A-HJKMNP-Z2-9]{4}-[A-HJKMNP-Z2-9]{4}$/);
    expect(code.matches(code.value!.toLowerCase().replaceAll('-', ' '))).toBe(true);
    expect(code.matches(code.value!.slice(0, -1))).toBe(false);
    expect(code.matches('')).toBe(false);
    const value = code.value;
    expect(await code.use()).toBe(true);
    expect(consumed).toEqual([value]);
    expect(code.value).toBeUndefined();
    expect(await code.use()).toBe(false);
    expect(new SetupCode().matches('')).toBe(false);
  });

  it('is refused when the store says another replica used it first', async () => {
    const code = new SetupCode(generateSetupCode(), async () => false);
    expect(await code.use()).toBe(false);
  });
});

describe('usage summary', () => {
  it('lists the last 30 UTC days, across a month end', () => {
    const days = lastDays(new Date('2030-03-02T23:59:00Z'));
    expect(days).toHaveLength(30);
    expect(days[0]).toBe('2030-02-01');
    expect(days.slice(-3)).toEqual(['2030-02-28', '2030-03-01', '2030-03-02']);
  });

  it('adds rows up per day, per token and in all, ignoring days outside the period', () => {
    const days = ['2030-01-01', '2030-01-02'];
    const summary = summarizeUsage(
      [
        { userTokenId: 'a', day: '2030-01-01', succeeded: 2, refused: 1, failed: 0, megapixels: 1.5 },
        { userTokenId: 'b', day: '2030-01-01', succeeded: 1, refused: 0, failed: 1, megapixels: 0.5 },
        { userTokenId: 'a', day: '2030-01-02', succeeded: 4, refused: 0, failed: 0, megapixels: 4 },
        { userTokenId: 'a', day: '2029-12-31', succeeded: 99, refused: 0, failed: 0, megapixels: 99 },
      ],
      days,
    );
    expect(summary.daily).toEqual([
      { succeeded: 3, refused: 1, failed: 1, megapixels: 2 },
      { succeeded: 4, refused: 0, failed: 0, megapixels: 4 },
    ]);
    expect(summary.total).toEqual({ succeeded: 7, refused: 1, failed: 1, megapixels: 6 });
    expect(summary.perToken.get('a')?.total).toEqual({ succeeded: 6, refused: 1, failed: 0, megapixels: 5.5 });
    expect(summary.perToken.get('b')?.daily[1]).toEqual({ succeeded: 0, refused: 0, failed: 0, megapixels: 0 });
    expect(errorRate(summary.total)).toBeCloseTo(2 / 9);
    expect(errorRate({ succeeded: 0, refused: 0, failed: 0, megapixels: 0 })).toBeUndefined();
  });

  it('charts one bar group per day with a tooltip, and labels the chart', () => {
    const days = lastDays(new Date('2030-01-30T00:00:00Z'));
    const daily = days.map((_, i) => ({ succeeded: i === 29 ? 7 : 0, refused: i === 29 ? 1 : 0, failed: 0, megapixels: 0 }));
    const svg = usageChart(days, daily, 'Removals per day').text;
    expect(svg.match(/<g><title>/g)).toHaveLength(30);
    expect(svg).toContain('<title>Jan 30: 7 removals, 1 error</title>');
    expect(svg).toContain('role="img" aria-label="Removals per day"');
    expect(svg.match(/class="bar-ok"/g)).toHaveLength(1);
    expect(svg.match(/class="bar-bad"/g)).toHaveLength(1);
  });
});
