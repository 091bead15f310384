/**
 * Token counts for when the upstream reports none (or a stream is cut short): about four
 * characters per token, the usual rule of thumb for English text. Only used for charging.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

export function estimatePromptTokens(prompt: unknown): number {
  if (typeof prompt === 'string') return estimateTokens(prompt);
  if (!Array.isArray(prompt)) return 0;
  let total = 0;
  for (const item of prompt) {
    if (typeof item === 'number') total += 1;
    else if (typeof item === 'string') total += estimateTokens(item);
    else if (Array.isArray(item)) total += item.length;
  }
  return total;
}
