/** One part of a multipart/form-data body. */
export interface FormPart {
  name: string;
  /** Absent: the Content-Disposition has no filename parameter at all (a plain field). */
  filename?: string;
  /** Absent: the part has no Content-Type header (RFC 7578 then means text/plain). */
  contentType?: string;
  data: Uint8Array | string;
}

/**
 * A multipart/form-data body built byte by byte, so that the tests' odd parts (no filename,
 * no type) can be sent as well as an ordinary upload; the one builder of the tests, the load
 * test and the benchmarks.
 *
 * @example const { body, contentType } = multipartBody([{ name: 'file', filename: 'a.jpg', contentType: 'image/jpeg', data: jpeg }, { name: 'format', data: 'webp' }])
 */
export function multipartBody(parts: FormPart[], boundary = `cutout-${Math.random().toString(16).slice(2)}`): { body: Buffer; contentType: string } {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename === undefined ? '' : `; filename="${part.filename}"`}`;
    const type = part.contentType === undefined ? '' : `Content-Type: ${part.contentType}\r\n`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${type}\r\n`), Buffer.from(part.data), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}
