import multipart from '@fastify/multipart';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { CutoutError } from '../../errors.js';
import { JOB_ID } from '../../jobs/job-ids.js';
import { JobBody, readIdempotencyKey, readJobJson } from '../../jobs/job-request.js';
import type { MadeJob } from '../../jobs/job-service.js';
import { jobUploadLimits } from '../../jobs/job-upload.js';
import { resultsZip } from '../../jobs/results-zip.js';
import type { JobRecord } from '../../store/job-records.js';
import { batchJob } from '../batch-job.js';
import { requireCsrfForm, requireCsrfHeader, requireSessionForApi, requireSignedIn, sendPage } from '../guards.js';
import { csrfToken } from '../session.js';
import { batchPage } from '../views/batch-page.js';
import { tokenStatus } from '../views/tokens-page.js';

/** Jobs the page lists: enough to follow a day's work, few enough to poll. */
const RECENT_JOBS = 20;

/** The signed-in account's job with this id, or 404 as the API answers for another account's. */
async function accountJob(request: FastifyRequest, jobId: string): Promise<JobRecord> {
  const job = JOB_ID.test(jobId) ? await request.server.store.findJobOfAccount(jobId, request.dashboardSession!.account.id) : undefined;
  if (!job) throw new CutoutError('not_found', 'No job with this id for this account.');
  return job;
}

/** Which of the account's user tokens the job is made with: its id, from the page's menu. */
const TokenQuery = Type.Object({ token: Type.String({ minLength: 1, maxLength: 100, description: "The id of one of the account's active user tokens." }) });
const JobParams = Type.Object({ id: Type.String() });

/**
 * The Batch page and its endpoints. A job made here is made by `JobService`, exactly as one
 * made with `POST /api/v1/jobs` (JSON of URLs) or `/api/v1/jobs/multipart` (files and
 * zips), with the same checks, caps and answers (problem+json on error); what differs is who
 * asks: the dashboard session (and its CSRF token in `x-csrf-token`), never a token. A job
 * belongs to a user token, so the page sends the id of one of the account's active tokens
 * (`?token=`); the job counts against that token's caps and usage. Following, downloading
 * and cancelling take any job of the account.
 */
export const batchRoutes: FastifyPluginAsync = async (app) => {
  const { config, store } = app;
  const service = app.jobs.service;

  app.get('/batch', { preHandler: requireSignedIn }, async (request, reply) => {
    const accountId = request.dashboardSession!.account.id;
    const [tokens, records] = await Promise.all([app.tokens.listUserTokens(accountId), store.listJobsOfAccount(accountId, RECENT_JOBS)]);
    const now = new Date().toISOString();
    const jobs = await Promise.all(records.map((job) => batchJob(service, job)));
    const page = batchPage({
      session: request.dashboardSession!,
      csrf: csrfToken(request, reply),
      tokens: tokens.filter((token) => tokenStatus(token, now) === 'active'),
      jobs,
      tokenNames: new Map(tokens.map((token) => [token.id, token.name])),
      retentionSeconds: config.jobRetention,
    });
    return sendPage(reply, page);
  });

  await app.register(batchApi);
};

/** The page's endpoints: make a job (JSON), follow it, download its results, cancel it (a form). */
const batchApi: FastifyPluginAsyncTypebox = async (app) => {
  const { config } = app;
  const service = app.jobs.service;
  await app.register(multipart, jobUploadLimits(config.jobMaxUploadBytes));

  /** The user token a job is made with: one of the signed-in account's, active. */
  const chosenToken = async (request: FastifyRequest, tokenId: string): Promise<string> => {
    const tokens = await app.tokens.listUserTokens(request.dashboardSession!.account.id);
    const token = tokens.find((candidate) => candidate.id === tokenId);
    if (!token) throw new CutoutError('invalid_request', 'The token chosen for the job is not one of this account\'s; reload the page and choose another.');
    const status = tokenStatus(token, new Date().toISOString());
    if (status !== 'active') throw new CutoutError('invalid_request', `The token “${token.name}” is ${status}, and cannot make a job; choose another, or create one on the Tokens page.`);
    return token.id;
  };
  const answerMade = async (reply: FastifyReply, { job, counts }: MadeJob) => reply.code(202).header('cache-control', 'no-store').send(await batchJob(service, job, counts));
  const idempotencyKey = (request: FastifyRequest) => readIdempotencyKey(request.headers['idempotency-key']);
  // Both checked before a byte of the body is read.
  const signedInWithCsrf = async (request: FastifyRequest) => {
    await requireSessionForApi(request);
    await requireCsrfHeader(request);
  };

  app.post(
    '/batch/jobs',
    { onRequest: signedInWithCsrf, preValidation: readJobJson, schema: { querystring: TokenQuery, body: JobBody } },
    async (request, reply) => answerMade(reply, await service.makeFromList(await chosenToken(request, request.query.token), idempotencyKey(request), request.body, request.jobBody!)),
  );

  app.post(
    '/batch/jobs/multipart',
    { onRequest: signedInWithCsrf, schema: { querystring: TokenQuery } },
    async (request, reply) => answerMade(reply, await service.makeFromUpload(request, await chosenToken(request, request.query.token), idempotencyKey(request))),
  );

  app.get('/batch/jobs/:id', { onRequest: requireSessionForApi, schema: { params: JobParams } }, async (request, reply) =>
    reply.header('cache-control', 'no-store').send(await batchJob(service, await accountJob(request, request.params.id))),
  );

  app.get('/batch/jobs/:id/results', { onRequest: requireSessionForApi, schema: { params: JobParams } }, async (request, reply) => {
    const job = await accountJob(request, request.params.id);
    return reply.type('application/zip').header('cache-control', 'no-store').header('content-disposition', `attachment; filename="${job.id}.zip"`).send(resultsZip(service.finishedResults(job)));
  });

  // A form, so that it works as every other dashboard form does: back to the page, which shows the job cancelled.
  app.post('/batch/jobs/:id/cancel', { preHandler: [requireSignedIn, requireCsrfForm], schema: { params: JobParams } }, async (request, reply) => {
    await service.cancel(await accountJob(request, request.params.id));
    return reply.redirect('/dashboard/batch', 303);
  });
};
