import { randomBytes } from 'node:crypto';

/** `job_` and 128 random bits: a job's id is also what keeps it from being guessed. */
export const newJobId = (): string => `job_${randomBytes(16).toString('base64url')}`;

/** The shape {@link newJobId} makes; anything else is not a job. */
export const JOB_ID = /^job_[A-Za-z0-9_-]{22}$/;
