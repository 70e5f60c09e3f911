import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import multipart from '@fastify/multipart';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { CutoutError } from '../errors.js';
import { API_TAG } from '../http/openapi-document.js';
import { problemResponses, REQUEST_ID_HEADER } from '../http/openapi-schemas.js';
import type { JobRecord } from '../store/job-records.js';
import { OPTION_FORM_FIELDS } from '../api/option-schemas.js';
import { JOB_ID } from './job-ids.js';
import { JobBody, MAX_JOB_ITEMS, readIdempotencyKey, readJobJson } from './job-request.js';
import type { JobService, MadeJob } from './job-service.js';
import { itemView, JobPage, jobUrl, JobSummary, webhookView } from './job-view.js';
import { jobUploadLimits } from './job-upload.js';
import { resultFileName } from './result-files.js';
import { resultsZip } from './results-zip.js';

const ITEMS_PER_PAGE = 100;
const MAX_PER_PAGE = 1000;
const LIST_DEFAULT = 20;
const LIST_MAX = 100;

const security = [{ managedToken: [] }];
const UploadBody = Type.Object(
  { files: Type.Array(Type.String({ format: 'binary' }), { description: 'Images, and zip archives of images; any part names.' }), webhook_url: Type.Optional(Type.String({ description: 'As in the JSON request.' })), ...OPTION_FORM_FIELDS },
  { required: ['files'] },
);
const IdempotencyHeader = Type.Object({ 'idempotency-key': Type.Optional(Type.String({ description: 'Any 1–255 visible ASCII characters, new for each new job.' })) });
const JobParams = Type.Object({ id: Type.String({ description: 'The job id.' }) });
const ItemParams = Type.Object({ id: Type.String({ description: 'The job id.' }), item: Type.String({ pattern: '^[0-9]{1,6}$', description: "The item's index." }) });
// Query strings are text, and the app's validator converts no types.
const PageQuery = Type.Object({
  page: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,8}$', description: 'From 1; default 1.' })),
  per_page: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,8}$', description: `Items per page, at most ${MAX_PER_PAGE}; default ${ITEMS_PER_PAGE}.` })),
});
const ListQuery = Type.Object({
  limit: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,8}$', description: `Jobs to list, at most ${LIST_MAX}; default ${LIST_DEFAULT}.` })),
});
const BYTES = { schema: { type: 'string', format: 'binary' } };
/** A JSON answer as OpenAPI describes it, with the headers every answer carries. */
const json = (description: string, schema: unknown, headers: Record<string, unknown> = {}) => ({
  description,
  headers: { ...REQUEST_ID_HEADER, ...headers },
  content: { 'application/json': { schema } },
});
const JOB_MADE = {
  202: json('The job, made (or made before, for a retry with the same Idempotency-Key).', JobSummary, { location: { type: 'string', description: "The job's status_url." } }),
  ...problemResponses([400, 401, 413, 415, 422, 429, 431, 500, 503]),
};

/**
 * The jobs API: `POST /api/v1/jobs` makes a job of many image URLs and answers 202 at once;
 * the runner (`job-runner.ts`) works through it. A job is found only with a managed token of
 * the account (or, for a token without one, the token) that made it: any other gets 404.
 */
export const jobRoutes: FastifyPluginAsyncTypebox<{ service: JobService }> = async (app, { service }) => {
  const { config, store } = app;
  await app.register(multipart, jobUploadLimits(config.jobMaxUploadBytes));

  app.addHook('onRequest', async (request) => {
    await app.requireManagedToken(request);
  });

  const ownJob = async (request: FastifyRequest, jobId: string): Promise<JobRecord> => {
    const job = JOB_ID.test(jobId) ? await store.findJob(jobId, request.managedToken!.userTokenId) : undefined;
    if (!job) throw new CutoutError('not_found', 'No job with this id for this account.');
    return job;
  };
  /** 202 with the job made (or made before, for a retry with the same Idempotency-Key). */
  const answerMade = async (reply: FastifyReply, { job, counts }: MadeJob) => reply.code(202).header('location', jobUrl(job.id)).send(await service.summaryOf(job, counts));
  const idempotencyKey = (request: FastifyRequest) => readIdempotencyKey(request.headers['idempotency-key']);

  app.post(
    '/api/v1/jobs',
    {
      preValidation: readJobJson,
      schema: {
        summary: 'Make a job of many images',
        description: `Up to ${MAX_JOB_ITEMS} image URLs and the output options once; answers 202 with the job at once. An \`Idempotency-Key\` header makes a retry within 24 hours answer the same job.`,
        tags: [API_TAG.jobs],
        security,
        headers: IdempotencyHeader,
        body: JobBody,
        response: JOB_MADE,
      },
    },
    async (request, reply) => answerMade(reply, await service.makeFromList(request.managedToken!.userTokenId, idempotencyKey(request), request.body, request.jobBody!)),
  );

  app.post(
    '/api/v1/jobs/multipart',
    {
      // The body is read by the handler, part by part; the schema only describes it.
      validatorCompiler: () => () => true,
      schema: {
        summary: 'Make a job of uploaded images or a zip of them',
        description: `\`multipart/form-data\`: image file parts, and zip archives of images (a part named \`*.zip\` or sent as \`application/zip\`), up to ${MAX_JOB_ITEMS} images in all, and the output options as form fields. Each result is named after its file (without the extension). An archive inside an archive, an entry whose name points outside the archive, an image over the byte limit or an upload over CUTOUT_JOB_MAX_UPLOAD_BYTES inflated is refused, and nothing of it is kept.`,
        tags: [API_TAG.jobs],
        security,
        consumes: ['multipart/form-data'],
        headers: IdempotencyHeader,
        body: UploadBody,
        response: JOB_MADE,
      },
    },
    async (request, reply) => answerMade(reply, await service.makeFromUpload(request, request.managedToken!.userTokenId, idempotencyKey(request))),
  );

  app.get(
    '/api/v1/jobs',
    {
      schema: {
        summary: "The account's recent jobs, newest first",
        tags: [API_TAG.jobs],
        security,
        querystring: ListQuery,
        response: { 200: json('The jobs, without their items.', Type.Object({ jobs: Type.Array(JobSummary) })), ...problemResponses([400, 401, 431, 500, 503]) },
      },
    },
    async (request) => {
      const limit = Number(request.query.limit ?? LIST_DEFAULT);
      if (limit > LIST_MAX) throw new CutoutError('invalid_request', `limit is at most ${LIST_MAX}.`);
      const jobs = await store.listJobs(request.managedToken!.userTokenId, limit);
      return { jobs: await Promise.all(jobs.map((job) => service.summaryOf(job))) };
    },
  );

  app.get(
    '/api/v1/jobs/:id',
    {
      schema: {
        summary: 'A job: its status, counts, webhook and one page of its items',
        tags: [API_TAG.jobs],
        security,
        params: JobParams,
        querystring: PageQuery,
        response: { 200: json('The job and one page of its items.', JobPage), ...problemResponses([400, 401, 404, 431, 500, 503]) },
      },
    },
    async (request) => {
      const job = await ownJob(request, request.params.id);
      const page = Number(request.query.page ?? 1);
      const perPage = Number(request.query.per_page ?? ITEMS_PER_PAGE);
      if (perPage > MAX_PER_PAGE) throw new CutoutError('invalid_request', `per_page is at most ${MAX_PER_PAGE}.`);
      const items = await store.listJobItems(job.id, (page - 1) * perPage, perPage);
      const more = page * perPage < job.itemCount;
      return {
        ...(await service.summaryOf(job)),
        webhook: webhookView(job, await store.findWebhookDelivery(job.id)),
        items: items.map((item) => itemView(job.id, item)),
        page,
        per_page: perPage,
        next_page: more ? `${jobUrl(job.id)}?page=${page + 1}&per_page=${perPage}` : null,
      };
    },
  );

  app.get(
    '/api/v1/jobs/:id/items/:item',
    {
      schema: {
        summary: "One item's result",
        tags: [API_TAG.jobs],
        security,
        params: ItemParams,
        response: {
          200: { description: "The result's bytes, in the job's format.", headers: REQUEST_ID_HEADER, content: { 'image/png': BYTES, 'image/webp': BYTES, 'image/jpeg': BYTES, 'application/zip': BYTES } },
          ...problemResponses([401, 404, 409, 431, 500, 503]),
        },
      },
    },
    async (request, reply) => {
      const job = await ownJob(request, request.params.id);
      const item = await store.findJobItem(job.id, Number(request.params.item));
      if (!item) throw new CutoutError('not_found', `Job ${job.id} has no item ${request.params.item}.`);
      if (item.state !== 'succeeded' || !item.resultPath) {
        const waiting = item.state === 'queued' || item.state === 'running';
        throw new CutoutError('result_not_available', `Item ${item.index} is ${item.state}.`, waiting ? { headers: { 'retry-after': '5' } } : undefined);
      }
      return reply
        .type(item.contentType ?? 'application/octet-stream')
        .header('content-disposition', `attachment; filename="${resultFileName(item.clientId, item.index, item.resultPath)}"`)
        .send(createReadStream(join(config.dataDir, item.resultPath)));
    },
  );

  app.get(
    '/api/v1/jobs/:id/results',
    {
      schema: {
        summary: 'Every finished result in one zip',
        description: "Streamed as it is made; each file named after its item's `id` (letters, digits, `.`, `_`, `-` kept, the rest `_`), else its index. While the job runs, the results finished so far.",
        tags: [API_TAG.jobs],
        security,
        params: JobParams,
        response: { 200: { description: 'A zip archive.', headers: REQUEST_ID_HEADER, content: { 'application/zip': BYTES } }, ...problemResponses([401, 404, 431, 500, 503]) },
      },
    },
    async (request, reply) => {
      const job = await ownJob(request, request.params.id);
      return reply.type('application/zip').header('content-disposition', `attachment; filename="${job.id}.zip"`).send(resultsZip(service.finishedResults(job)));
    },
  );

  app.delete(
    '/api/v1/jobs/:id',
    {
      schema: {
        summary: 'Cancel a job',
        description: 'Its waiting and running items are cancelled; the results already finished stay downloadable until the job expires. Cancelling a finished job changes nothing.',
        tags: [API_TAG.jobs],
        security,
        params: JobParams,
        response: { 200: json('The job, cancelled (or as it was, when it had finished).', JobSummary), ...problemResponses([401, 404, 431, 500, 503]) },
      },
    },
    async (request) => {
      return service.summaryOf(await service.cancel(await ownJob(request, request.params.id)));
    },
  );
};
