/** Where a Gemini-style upstream is and how to present a channel's key to it. */

/** A channel's base_url may be given with or without a trailing `/v1beta`. */
const root = (baseUrl: string) => baseUrl.replace(/\/+$/, '').replace(/\/v1beta$/, '');

/** Gemini names models `models/<id>`; the path wants the id alone. */
const modelSegment = (model: string) => encodeURIComponent(model.replace(/^models\//, ''));

export const geminiApi = {
  generateContentUrl: (baseUrl: string, model: string) => `${root(baseUrl)}/v1beta/models/${modelSegment(model)}:generateContent`,
  streamGenerateContentUrl: (baseUrl: string, model: string) =>
    `${root(baseUrl)}/v1beta/models/${modelSegment(model)}:streamGenerateContent?alt=sse`,
  headers: (key: string, stream: boolean): Record<string, string> => ({
    'x-goog-api-key': key,
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
  }),
};
