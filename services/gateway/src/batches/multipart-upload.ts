import type { FastifyRequest } from 'fastify';
import { badRequest, GatewayError, type FileObject } from '@gateway/contracts';
import { fileCapRefusal, type FileStore } from '@gateway/database';
import type { FileLimits } from './batch-api-options.ts';
import { jsonlLines } from './jsonl-lines.ts';
import { LineSpool, type SpoolBudget } from './line-spool.ts';

/**
 * Why a form could not be read, as the client's error: a form cut short or with no boundary
 * (busboy's plain errors) was a 500, and a second file a 413 "reach files limit".
 */
function formProblem(error: unknown): unknown {
  if (error instanceof GatewayError || !(error instanceof Error)) return error;
  const { code, message } = error as Error & { code?: string };
  if (code === 'FST_FILES_LIMIT') return badRequest('send one file, in the multipart field "file"', 'file');
  if (code === 'FST_FIELDS_LIMIT' || code === 'FST_PARTS_LIMIT') return badRequest('the form has more fields than an upload needs: send file and purpose', 'file');
  // The multipart reader's own (FST_…) and busboy's (plain errors about the form); anything
  // else (PostgreSQL away) is answered as it is.
  if (code?.startsWith('FST_') || (error.constructor === Error && /form|part|boundary|multipart/i.test(message))) {
    return badRequest(`the multipart form could not be read: ${message.slice(0, 200)}`, 'file');
  }
  return error;
}

/**
 * A file's name as it is kept and listed: without control and format characters (an escape
 * sequence for whoever lists it in a terminal, a right-to-left override that spoofs its
 * extension), and `upload.jsonl` when nothing is left.
 */
export function storedFilename(name: string | undefined): string {
  return (name ?? '').replace(/[\p{Cc}\p{Cf}]/gu, '').trim() || 'upload.jsonl';
}

/** The purposes this gateway stores files for: batch input files only. */
const PURPOSES = new Set(['batch']);

/** Why a form's purpose is refused, or undefined when it is accepted. */
const purposeRefusal = (purpose: string | undefined) => {
  if (purpose === undefined) return badRequest('no purpose: send the multipart field "purpose" ("batch")', 'purpose');
  if (!PURPOSES.has(purpose)) return badRequest(`purpose must be "batch" (the only purpose this gateway stores files for), not "${purpose.slice(0, 64)}"`, 'purpose');
  return undefined;
};

/**
 * Reads an OpenAI Files upload (multipart: `file` and `purpose`, in either order) into `store`.
 * The file's lines are checked as its bytes arrive and kept in a spool on disk (line-spool.ts);
 * once the whole form is read (the SDKs send `purpose` after the file), they are written to
 * PostgreSQL in one transaction, on a connection held only for as long as that takes, never for
 * the client's pace. A refused or broken form (a bad line, past a limit, a wrong purpose, the
 * client gone) writes nothing. A user who keeps as many files, or bytes of them, as they may is
 * refused before the form is read; an upload that would pass the bytes left is refused as it
 * passes them, and the count is made again at the commit.
 */
export async function receiveUpload(
  request: FastifyRequest, store: FileStore, userId: number, limits: FileLimits, spools: { dir: string; budget: SpoolBudget }, owned?: () => Promise<void>,
): Promise<FileObject> {
  if (!request.isMultipart()) throw badRequest('send the file as multipart/form-data, with the fields file and purpose', 'file');
  const cap = { maxBytes: limits.userMaxBytes, maxFiles: limits.userMaxFiles };
  const usage = await store.usage(userId);
  const full = fileCapRefusal({ files: usage.files + 1, bytes: usage.bytes }, cap);
  if (full) throw full;
  const bytesLeft = cap.maxBytes - usage.bytes;
  const perLine = { maxLines: limits.maxLines, maxLineBytes: limits.maxLineBytes };
  const lineLimits = bytesLeft < limits.maxBytes
    ? { ...perLine, maxBytes: bytesLeft, tooLarge: (bytes: number) => fileCapRefusal({ files: 0, bytes: usage.bytes + bytes }, cap)! }
    : { ...perLine, maxBytes: limits.maxBytes };
  let purpose: string | undefined;
  let filename = '';
  let bytes = 0;
  let spooling: Promise<void> | undefined;
  const spool = new LineSpool(spools.budget, spools.dir);
  try {
    try {
      for await (const part of request.parts()) {
        if (part.type === 'field') {
          if (part.fieldname === 'purpose') purpose = String(part.value);
          continue;
        }
        if (part.fieldname !== 'file' || spooling) {
          part.file.resume();
          continue;
        }
        filename = storedFilename(part.filename);
        // Sent before the file, a wrong purpose is refused before a line is read. Not awaited
        // here: the form's fields after the file are read while its lines are spooled.
        const early = purpose === undefined ? undefined : purposeRefusal(purpose);
        spooling = early ? Promise.reject(early) : spool.write(jsonlLines(part.file, lineLimits, (n) => (bytes += n)));
        // A refused upload stops reading its lines: the rest of the form is drained, so the answer can go.
        spooling.catch(() => part.file.resume());
      }
    } catch (error) {
      // The upload's own refusal (a bad line, past a limit) says more than the form's end.
      await spooling?.then(() => {}, (refusal: unknown) => { throw formProblem(refusal); });
      throw formProblem(error);
    }
    if (!spooling) throw badRequest('no file: send it in the multipart field "file"', 'file');
    // Its lines are read from the form as it comes: a form cut short fails the spool itself.
    await spooling.catch((refusal: unknown) => { throw formProblem(refusal); });
    const refusal = purposeRefusal(purpose);
    if (refusal) throw refusal;
    return await store.upload(userId, filename, spool.lines(), { bytes, purpose: purpose! }, cap, owned);
  } finally {
    await spool.remove();
  }
}
