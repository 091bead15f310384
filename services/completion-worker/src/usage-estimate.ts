/**
 * Token counts for when the upstream reports none (or a stream is cut short): the same rule of
 * thumb the gateway holds quota by (about four characters per token). Only used for charging.
 */
export { estimatePromptTokens, estimateTokens } from '@gateway/contracts';
