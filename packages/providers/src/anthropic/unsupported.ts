import { badRequest, GatewayError } from '@gateway/contracts';

/**
 * A request Anthropic cannot carry out as the client meant it (audio, several choices): a 400
 * naming the field, before any call, rather than an answer that silently lacks what was asked.
 */
export function unsupported(param: string, what: string): GatewayError {
  return badRequest(`${what} is not supported by this model`, param);
}
