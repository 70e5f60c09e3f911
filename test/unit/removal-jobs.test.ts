import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectRemovalJobs } from '../../src/cli/removal-jobs.js';

describe('collectRemovalJobs', () => {
  let root: string;
  const at = (...parts: string[]) => join(root, ...parts);

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'cutout-jobs-'));
    await mkdir(at('photos', 'b', 'deeper'), { recursive: true });
    await mkdir(at('photos', '.thumbs'));
    await mkdir(at('photos', 'out', 'old'), { recursive: true });
    for (const file of ['shoe.jpg', 'shoe.PNG', 'hat.webp', 'b/deeper/c.tiff', 'readme.md', '.thumbs/x.jpg', 'out/old/previous.png', 'noext']) {
      await writeFile(at('photos', file), 'bytes');
    }
    await symlink(at('photos'), at('photos', 'b', 'loop'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('walks folders for image files in order, keeping sub-folders; leaves out hidden entries, folder links and the output folder', async () => {
    const jobs = await collectRemovalJobs([at('photos')], at('photos', 'out'), ['.png']);
    expect(jobs.map((job) => job.output)).toEqual([at('photos', 'out', 'b', 'deeper', 'c.png'), at('photos', 'out', 'hat.png'), at('photos', 'out', 'shoe-png.png'), at('photos', 'out', 'shoe-jpg.png')]);
    expect(jobs.map((job) => job.source)).toEqual([{ file: at('photos', 'b', 'deeper', 'c.tiff') }, { file: at('photos', 'hat.webp') }, { file: at('photos', 'shoe.PNG') }, { file: at('photos', 'shoe.jpg') }]);
  });

  it('takes a file named on the command line whatever its name, and names URL results after their path', async () => {
    const jobs = await collectRemovalJobs([at('photos', 'noext'), 'https://example.com/a/Red%20Hat.jpg?size=2', 'https://example.com/', 'https://example.org/b/Red%20Hat.jpg'], at('out'), ['.webp']);
    expect(jobs.map((job) => job.output)).toEqual([at('out', 'noext.webp'), at('out', 'Red_Hat-jpg.webp'), at('out', 'image.webp'), at('out', 'Red_Hat-jpg-2.webp')]);
    expect(jobs[1].source).toEqual({ url: 'https://example.com/a/Red%20Hat.jpg?size=2' });
  });

  it('refuses a run that would write over one of its inputs, and a path that does not exist', async () => {
    await expect(collectRemovalJobs([at('photos', 'hat.webp')], at('photos'), ['.webp'])).rejects.toThrow(/would be written over the input/);
    await expect(collectRemovalJobs([at('nothing-here')], at('out'), ['.png'])).rejects.toThrow(/no such file or folder/);
  });

  it('with two possible endings (format auto), names both and refuses a run where either would write over an input', async () => {
    const [job] = await collectRemovalJobs([at('photos', 'hat.webp')], at('out'), ['.png', '.jpg']);
    expect(job.candidates).toEqual([at('out', 'hat.png'), at('out', 'hat.jpg')]);
    expect(job.output).toBe(at('out', 'hat.png'));
    await expect(collectRemovalJobs([at('photos', 'shoe.jpg')], at('photos'), ['.png', '.jpg'])).rejects.toThrow(/would be written over the input/);
  });
});
