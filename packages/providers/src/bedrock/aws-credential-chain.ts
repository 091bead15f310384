/**
 * The worker's own AWS credentials, for a `bedrock` channel whose key says
 * `"credentials": "environment"`: the AWS SDK's default chain (`@aws-sdk/credential-provider-node`),
 * in its order: `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`), the
 * shared config and credentials files (`AWS_PROFILE`, SSO, a process), web identity (EKS), then
 * the ECS container's or EC2 instance's role. One chain a process, which keeps what it found
 * and finds it again before temporary credentials expire. Finding none is the channel's 401, so
 * a worker without credentials counts toward the channel's auto-disable; the chain's own error
 * is not handed on (it may name files and profiles).
 */
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { badCredential } from '../channel-credential.ts';
import type { AwsKey } from './credential.ts';

let chain: ReturnType<typeof defaultProvider> | undefined;

export async function awsCredentialsFromEnvironment(): Promise<AwsKey> {
  chain ??= defaultProvider();
  try {
    const found = await chain();
    return { accessKeyId: found.accessKeyId, secretAccessKey: found.secretAccessKey, ...(found.sessionToken ? { sessionToken: found.sessionToken } : {}) };
  } catch {
    throw badCredential('bedrock', 'says "credentials": "environment", and the worker\'s AWS credential chain found none');
  }
}
