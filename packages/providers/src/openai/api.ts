/** Where an OpenAI-style upstream is and how to present a channel's key to it. */
export const openaiApi = {
  completionsUrl: (baseUrl: string) => `${baseUrl.replace(/\/+$/, '')}/v1/completions`,
  headers: (key: string, stream: boolean): Record<string, string> => ({
    authorization: `Bearer ${key}`,
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
  }),
};
