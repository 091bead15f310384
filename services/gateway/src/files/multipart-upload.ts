import type { FastifyRequest } from 'fastify';
import { badRequest, GatewayError, type FileObject } from '@gateway/contracts';
import { fileCapRefusal, type FileStore } from '@gateway/database';
import type { FileLimits } from '../routes/batch-api-options.ts';
import { jsonlLines } from './jsonl-lines.ts';

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
 * Reads an OpenAI Files upload (multipart: `file` and `purpose`, in either order) into `store`,
 * the file's lines written while its bytes arrive. The SDKs send `purpose` after the file, so the
 * upload's transaction commits only once the whole form is read; a refused or broken form (a bad
 * line, past a limit, a wrong purpose, the client gone) rolls it back, and the answer waits for
 * the rollback, so no upload ever holds a connection after its request. A user who keeps as many
 * files, or bytes of them, as they may is refused before the form is read; an upload that would
 * pass the bytes left is refused as it passes them, and the count is made again at the commit.
 */
export async function receiveUpload(request: FastifyRequest, store: FileStore, userId: number, limits: FileLimits): Promise<FileObject> {
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
  let uploading: Promise<FileObject> | undefined;
  const formRead = Promise.withResolvers<void>();
  // Only the upload waits on it, and only once it has read the file: a form that fails sooner
  // must not leave it rejected and unheeded.
  formRead.promise.catch(() => {});
  try {
    for await (const part of request.parts()) {
      if (part.type === 'field') {
        if (part.fieldname === 'purpose') purpose = String(part.value);
        continue;
      }
      if (part.fieldname !== 'file' || uploading) {
        part.file.resume();
        continue;
      }
      let bytes = 0;
      // Sent before the file, a wrong purpose is refused before a line is written. Not awaited
      // here: the form's fields after the file are read while its lines are written.
      const early = purpose === undefined ? undefined : purposeRefusal(purpose);
      uploading = early ? Promise.reject(early) : store.upload(userId, storedFilename(part.filename), jsonlLines(part.file, lineLimits, (n) => (bytes += n)), async () => {
        await formRead.promise;
        const refusal = purposeRefusal(purpose);
        if (refusal) throw refusal;
        return { bytes, purpose: purpose! };
      }, cap);
      // A refused upload stops reading its lines: the rest of the form is drained, so the answer can go.
      uploading.catch(() => part.file.resume());
    }
  } catch (error) {
    formRead.reject(error);
    // The upload's own refusal (a bad line, past a limit) says more than the form's end.
    await uploading?.then(() => {}, (refusal: unknown) => { throw formProblem(refusal); });
    throw formProblem(error);
  }
  formRead.resolve();
  if (!uploading) throw badRequest('no file: send it in the multipart field "file"', 'file');
  // Its lines are read from the form as it comes: a form cut short fails the upload itself.
  return uploading.catch((refusal: unknown) => { throw formProblem(refusal); });
}
