/**
 * Images and documents as Converse takes them: a format of its lists and the bytes base64 (text
 * encoded), never by URL; and a document's name, which Converse limits to letters, digits, single
 * spaces, hyphens, parentheses and brackets, and refuses twice in one request ("Messages can't
 * contain duplicate document names"). A conversation replays every turn, so a file attached
 * again later, or two untitled ones, would break it for good: a repeated name takes " (2)", " (3)".
 */
import { badRequest, type DocumentPart, type ImagePart, type MediaSource } from '@gateway/contracts';

const IMAGE_FORMATS: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/jpg': 'jpeg', 'image/gif': 'gif', 'image/webp': 'webp' };
const DOCUMENT_FORMATS: Record<string, string> = {
  'application/pdf': 'pdf', 'text/csv': 'csv', 'text/html': 'html', 'text/plain': 'txt', 'text/markdown': 'md',
  'application/msword': 'doc', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.ms-excel': 'xls', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
};
const NAME_LENGTH = 200;

/** Media as Converse takes it: its format and base64 bytes. */
function mediaOf(source: MediaSource, formats: Record<string, string>, path: string): { format: string; source: { bytes: string } } {
  if (source.kind === 'url') throw badRequest(`${path}: a media source by URL cannot go to a bedrock channel; send it inline as base64`, path);
  const format = formats[source.mediaType.toLowerCase()];
  if (!format) throw badRequest(`${path}: ${source.mediaType} is not a media type Bedrock's Converse takes`, path);
  return { format, source: { bytes: source.kind === 'text' ? Buffer.from(source.data).toString('base64') : source.data } };
}

export const imageBlock = (part: ImagePart, path: string) => ({ image: mediaOf(part.source, IMAGE_FORMATS, path) });

/** The document names of one request, each distinct (compared without case, to be safe). */
export class DocumentNames {
  private readonly taken = new Set<string>();

  nameFor(title: string | undefined): string {
    const base = (title ?? '').replace(/[^A-Za-z0-9\s\-()[\]]/g, ' ').replace(/\s+/g, ' ').trim().slice(0, NAME_LENGTH) || 'document';
    let name = base;
    for (let n = 2; this.taken.has(name.toLowerCase()); n++) name = `${base.slice(0, NAME_LENGTH - ` (${n})`.length).trimEnd()} (${n})`;
    this.taken.add(name.toLowerCase());
    return name;
  }
}

export const documentBlock = (part: DocumentPart, path: string, names: DocumentNames) => ({
  document: { ...mediaOf(part.source, DOCUMENT_FORMATS, path), name: names.nameFor(part.title) },
});
