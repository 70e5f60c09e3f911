/**
 * A section of a document between `<!-- name:start -->` and `<!-- name:end -->`, which a
 * script writes from the code and a test compares with what the script would write.
 */

/** `document` with the text between the markers of `name` replaced by `content` (a newline after the start marker and before the end one). */
export function withSection(document: string, name: string, content: string): string {
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const from = document.indexOf(start);
  const to = document.indexOf(end);
  if (from < 0 || to < from) throw new Error(`the document has no section marked ${start} … ${end}`);
  return `${document.slice(0, from + start.length)}\n${content.trimEnd()}\n${document.slice(to)}`;
}
