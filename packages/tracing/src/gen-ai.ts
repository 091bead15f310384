/**
 * The attributes of the OpenTelemetry GenAI semantic conventions that spans carry (still
 * "development" there, so named here rather than taken from the conventions package's
 * incubating entry). Never the prompt, the reply, a key or a user's name.
 */
export const GEN_AI = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
} as const;

/** The GenAI operation name of a model job's operation (`ModelOperation` in @gateway/contracts; none is a completion). */
export function genAiOperationOf(operation: string | undefined): string {
  switch (operation) {
    case undefined:
    case 'completions':
      return 'text_completion';
    case 'chat':
    case 'responses':
    case 'messages':
    case 'geminiChat':
      return 'chat';
    case 'generateContent':
      return 'generate_content';
    case 'embeddings':
    case 'embedContent':
      return 'embeddings';
    default:
      return operation;
  }
}
