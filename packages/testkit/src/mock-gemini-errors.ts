/** The mock Gemini upstream's error bodies, as Google writes them: `{"error":{code,message,status}}`, a 429 saying when to retry. */
import { geminiError } from '@gateway/contracts';
import type { MockRefusal } from './mock-wire-format.ts';

/** The content type of every Gemini JSON answer. */
export const GEMINI_JSON_TYPE = 'application/json; charset=UTF-8';

const RETRY_IN_A_SECOND = [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }];

const DEFAULT_MESSAGES: Record<number, string> = {
  400: 'Request contains an invalid argument.',
  401: 'Request is missing required authentication credential.',
  403: 'The caller does not have permission',
  404: 'Requested entity was not found.',
  429: 'Resource has been exhausted (e.g. check quota).',
  500: 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
  503: 'The model is overloaded. Please try again later.',
  504: 'The request timed out. Please try again.',
};

const defaultMessage = (status: number) => DEFAULT_MESSAGES[status] ?? `HTTP ${status}`;

/** Gemini's error body for `status`, its default message unless one is given; a 429 says when to retry. */
export const geminiFailureBody = (status: number, message = defaultMessage(status)) =>
  geminiError(status, message, status === 429 ? RETRY_IN_A_SECOND : undefined);

/** A refusal before anything is served (a key, a route, a model), with Gemini's error body. */
export const geminiRefusal = (status: number, message?: string, details?: unknown[]): MockRefusal =>
  ({ status, body: geminiError(status, message ?? defaultMessage(status), details) });
