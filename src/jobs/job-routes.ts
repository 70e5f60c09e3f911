import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import multipart from '@fastify/multipart';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { CutoutError } from '../errors.js';
import { API_TAG } from '../http/openapi-document.js';
import { problemResponses, REQUEST_ID_HEADER } from '../http/openapi-schemas.js';
import { multipartLimits } from '../http/form-parts.js';
import type { JobRecord, NewJobItem } from '../store/job-records.js';
import { NATIVE_OPTION_COUNT, OPTION_FIELDS, OPTION_FORM_FIELDS } from '../api/option-schemas.js';
import { JOB_ID, newJobId } from './job-ids.js';
import { bodyHash, MAX_JOB_ITEMS, readIdempotencyKey, takeJobOptions } from './job-request.js';
import type { JobWork } from './job-work.js';
import { itemView, JobPage, jobSummary, jobUrl, JobSummary } from './job-view.js';
import { readJobUpload } from './job-upload.js';
import { jobFolder, resultFileName } from './result-files.js';
import { resultsZip, type ZipEntry } from './results-zip.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** A job request's output options as sent, and its body's hash, read before validation. */
    jobBody?: { options: Record<string, unknown>; hash: string };
  }
}

/** How long an Idempotency-Key answers with the job it made. */
const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;
/** What a client over its caps is asked to wait: about what a few items take on a busy server. */
const CAPS_RETRY_AFTER_SECONDS = 30;
const ITEMS_PER_PAGE = 100;
const MAX_PER_PAGE = 1000;

const security = [{ managedToken: [] }];
const Image = Type.Object({
  image_url: Type.String({ minLength: 1, maxLength: 8192, description: 'http(s) URL of the image; Cutout fetches it with the guards of the URL endpoint.' }),
  id: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "The client's own id for the image (a SKU): the result's file name in the zip." })),
});
const JobBody = Type.Object({
  images: Type.Array(Image, { minItems: 1, maxItems: MAX_JOB_ITEMS, description: `The images, 1 to ${MAX_JOB_ITEMS}.` }),
  webhook_url: Type.Optional(Type.String({ pattern: '^https?://', maxLength: 2048, description: 'Kept with the job; this version does not call it yet.' })),
  ...OPTION_FIELDS,
});
const UploadBody = Type.Object(
  { files: Type.Array(Type.String({ format: 'binary' }), { description: 'Images, and zip archives of images; any part names.' }), webhook_url: Type.Optional(Type.String()), ...OPTION_FORM_FIELDS },
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
 * the runner (`job-work.ts`) works through it. A job is found only with a managed token of
 * the account (or, for a token without one, the token) that made it: any other gets 404.
 */
export const jobRoutes: FastifyPluginAsyncTypebox<{ runner: JobWork }> = async (app, { runner }) => {
  const { config, store } = app;
  await app.register(multipart, multipartLimits(config.jobMaxUploadBytes, NATIVE_OPTION_COUNT, MAX_JOB_ITEMS, 64 * 1024));

  app.addHook('onRequest', async (request) => {
    await app.requireManagedToken(request);
  });

  const ownJob = async (request: FastifyRequest, jobId: string): Promise<JobRecord> => {
    const job = JOB_ID.test(jobId) ? await store.findJob(jobId, request.managedToken!.userTokenId) : undefined;
    if (!job) throw new CutoutError('not_found', 'No job with this id for this account.');
    return job;
  };
  const summaryOf = async (job: JobRecord) => jobSummary(job, await store.countJobItems(job.id));

  /** The answer to a request whose Idempotency-Key made a job already, or undefined when the key is free. */
  const replayed = async (userTokenId: string, key: string, hash: string) => {
    const earlier = await store.findJobByIdempotencyKey(userTokenId, key);
    if (!earlier) return undefined;
    if (Date.now() - Date.parse(earlier.createdAt) > IDEMPOTENCY_WINDOW_MS) {
      await store.releaseIdempotencyKey(earlier.id);
      return undefined;
    }
    if (earlier.bodyHash !== hash) throw new CutoutError('idempotency_key_reused', `The Idempotency-Key ${key} made job ${earlier.id} from a different body; use a new key for a new job.`);
    return earlier;
  };

  const capsRetry = { headers: { 'retry-after': String(CAPS_RETRY_AFTER_SECONDS) } };
  const refuseOverOpenJobs = async (userTokenId: string) => {
    const load = await store.openJobLoad(userTokenId);
    if (load.openJobs >= config.jobMaxOpen) throw new CutoutError('too_many_jobs', `This token has ${load.openJobs} unfinished jobs, as many as it may have; retry when one is done.`, capsRetry);
    return load;
  };

  /**
   * Makes a job, or answers the one its Idempotency-Key made: the one way both kinds of job
   * request end, with the token's caps checked and the runner woken.
   */
  const makeJob = async (
    request: FastifyRequest,
    reply: FastifyReply,
    made: { id: string; options: Record<string, unknown>; hash: string; items: NewJobItem[]; webhookUrl: string | null },
  ): Promise<FastifyReply> => {
    const token = request.managedToken!;
    const key = readIdempotencyKey(request.headers['idempotency-key']);
    const answer = async (job: JobRecord) => reply.code(202).header('location', jobUrl(job.id)).send(await summaryOf(job));

    const earlier = key && (await replayed(token.userTokenId, key, made.hash));
    if (earlier) return answer(earlier);

    const count = made.items.length;
    if (count > config.jobMaxQueuedItems) {
      throw new CutoutError('invalid_request', `A job may hold at most ${config.jobMaxQueuedItems} images on this server (CUTOUT_JOB_MAX_QUEUED_ITEMS).`);
    }
    const load = await refuseOverOpenJobs(token.userTokenId);
    if (load.queuedItems + count > config.jobMaxQueuedItems) {
      throw new CutoutError('too_many_jobs', `This token has ${load.queuedItems} images waiting; with ${count} more it would pass ${config.jobMaxQueuedItems}.`, capsRetry);
    }
    const job = { id: made.id, userTokenId: token.userTokenId, options: made.options, createdAt: new Date().toISOString(), webhookUrl: made.webhookUrl, idempotencyKey: key, bodyHash: made.hash };
    try {
      await store.createJob(job, made.items);
    } catch (error) {
      // The same key sent twice at once: the other request made the job.
      const other = key && (await replayed(token.userTokenId, key, made.hash));
      if (other) return answer(other);
      throw error;
    }
    // Read before the runner is told, so that the answer shows the job as made.
    const stored = (await store.findJob(job.id, token.userTokenId))!;
    const answered = await answer(stored);
    await runner.jobMade(stored);
    return answered;
  };

  app.post(
    '/api/v1/jobs',
    {
      preValidation: async (request) => {
        if (!/^application\/json\b/i.test(request.headers['content-type'] ?? '')) throw new CutoutError('unsupported_media_type', 'Send the job as application/json.');
        const body = request.body;
        if (body && typeof body === 'object' && !Array.isArray(body)) {
          const hash = bodyHash(body);
          request.jobBody = { options: takeJobOptions(body as Record<string, unknown>), hash };
        }
      },
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
    async (request, reply) => {
      const { options, hash } = request.jobBody!;
      const items = request.body.images.map((image) => ({ imageUrl: image.image_url, clientId: image.id ?? null }));
      return makeJob(request, reply, { id: newJobId(), options, hash, items, webhookUrl: request.body.webhook_url ?? null });
    },
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
    async (request, reply) => {
      if (!request.isMultipart()) throw new CutoutError('unsupported_media_type', 'Send multipart/form-data with image files or a zip archive of images.');
      const id = newJobId();
      const folder = join(config.dataDir, jobFolder(id));
      try {
        await refuseOverOpenJobs(request.managedToken!.userTokenId);
        const upload = await readJobUpload(request, config.dataDir, id, { maxImageBytes: config.maxImageBytes, maxUploadBytes: config.jobMaxUploadBytes });
        const options = takeJobOptions(upload.fields);
        if (upload.fields.webhook_url && !/^https?:\/\//.test(upload.fields.webhook_url)) throw new CutoutError('invalid_request', 'webhook_url must be an http(s) URL.');
        const answered = await makeJob(request, reply, { id, options, hash: upload.hash, items: upload.items, webhookUrl: upload.fields.webhook_url || null });
        // A retry answered with the job its key made first: this upload's copy is not needed.
        if (reply.getHeader('location') !== jobUrl(id)) await rm(folder, { recursive: true, force: true });
        return answered;
      } catch (error) {
        await rm(folder, { recursive: true, force: true });
        throw error;
      }
    },
  );

  app.get(
    '/api/v1/jobs/:id',
    {
      schema: {
        summary: 'A job: its status, counts and one page of its items',
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
        ...(await summaryOf(job)),
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
      const { dataDir } = config;
      async function* finished(): AsyncGenerator<ZipEntry> {
        for (let offset = 0; offset < job.itemCount; offset += MAX_PER_PAGE) {
          for (const item of await store.listJobItems(job.id, offset, MAX_PER_PAGE)) {
            if (item.state === 'succeeded' && item.resultPath) yield { name: resultFileName(item.clientId, item.index, item.resultPath), path: join(dataDir, item.resultPath) };
          }
        }
      }
      return reply.type('application/zip').header('content-disposition', `attachment; filename="${job.id}.zip"`).send(resultsZip(finished()));
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
      const job = await ownJob(request, request.params.id);
      if (await store.cancelJob(job.id, new Date().toISOString())) await runner.cancel(job.id);
      return summaryOf((await store.findJob(job.id, request.managedToken!.userTokenId))!);
    },
  );
};
