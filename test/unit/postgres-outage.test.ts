import { describe, expect, it } from 'vitest';
import { isPostgresUnreachable } from '../../src/store/postgres-outage.js';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('isPostgresUnreachable', () => {
  it('recognises a server that is gone, stopping, starting or full, and a cut connection', () => {
    for (const error of [
      withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'),
      withCode('read ECONNRESET', 'ECONNRESET'),
      withCode('terminating connection due to administrator command', '57P01'),
      withCode('the database system is starting up', '57P03'),
      withCode('the database system is shutting down', '57P03'),
      withCode('connection failure', '08006'),
      withCode('sorry, too many clients already', '53300'),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      new AggregateError([withCode('connect ECONNREFUSED ::1:5432', 'ECONNREFUSED'), withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')], ''),
    ]) {
      expect(isPostgresUnreachable(error), error.message).toBe(true);
    }
  });

  it('leaves errors of the query itself alone', () => {
    for (const error of [
      withCode('relation "user_tokens" does not exist', '42P01'),
      withCode('duplicate key value violates unique constraint', '23505'),
      withCode('syntax error at or near "selec"', '42601'),
      new Error('something else'),
      'ECONNREFUSED',
      undefined,
    ]) {
      expect(isPostgresUnreachable(error)).toBe(false);
    }
  });
});
