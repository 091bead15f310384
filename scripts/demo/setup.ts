/**
 * Makes the demo's records exist, idempotently, through the management API as any admin script
 * would: one `openai` and one `gemini` channel pointing at the demo upstream (re-pointed when its
 * port changed), and one API key, kept in the demo's credentials file so it survives restarts.
 */
import { DEMO_COMPLETION_MODEL, DEMO_SPEECH_MODEL, type DemoUpstream } from './upstream.ts';

interface Envelope<T> { success: boolean; message: string; data: T }
interface ChannelRecord { id: number; name: string }

export interface DemoRecords {
  apiKey: string;
  models: { completion: string; speech: string };
}

export async function ensureDemoRecords(gatewayUrl: string, adminToken: string, upstream: DemoUpstream, savedKey: string | undefined): Promise<DemoRecords> {
  async function admin<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetch(gatewayUrl + path, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const answer = (await response.json()) as Envelope<T>;
    if (!answer.success) throw new Error(`${method} ${path} failed (${response.status}): ${answer.message}`);
    return answer.data;
  }

  const channels = await admin<{ items: ChannelRecord[] }>('GET', '/api/channel/?page_size=100');
  const wanted = [
    { name: 'demo-openai', type: 'openai', key: 'sk-demo-upstream', base_url: upstream.openaiUrl, models: [DEMO_COMPLETION_MODEL] },
    { name: 'demo-gemini', type: 'gemini', key: upstream.geminiKey, base_url: upstream.geminiUrl, models: [DEMO_SPEECH_MODEL] },
  ];
  for (const channel of wanted) {
    const existing = channels.items.find((c) => c.name === channel.name);
    if (existing) await admin('PUT', '/api/channel/', { id: existing.id, ...channel, status: 1 });
    else await admin('POST', '/api/channel/', channel);
  }

  let apiKey = savedKey;
  const works = apiKey !== undefined && (await fetch(`${gatewayUrl}/v1/models`, { headers: { authorization: `Bearer ${apiKey}` } })).ok;
  if (!works) apiKey = (await admin<{ key: string }>('POST', '/api/token/', { name: 'demo', unlimited_quota: true })).key;
  return { apiKey: apiKey!, models: { completion: DEMO_COMPLETION_MODEL, speech: DEMO_SPEECH_MODEL } };
}
