import { describe, expect, it } from 'vitest';
import { GatewayError } from '../errors.ts';
import { parseOrThrow } from '../validation.ts';
import {
  GEMINI_PREBUILT_VOICES,
  geminiError,
  geminiGenerateRequest,
  geminiGenerateResponse,
  geminiInlineAudio,
  geminiRequestText,
} from './gemini-generate.ts';

const singleVoice = () => ({
  contents: [{ role: 'user', parts: [{ text: 'Say cheerfully: Have a wonderful day!' }] }],
  generationConfig: {
    responseModalities: ['AUDIO'],
    speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } },
  },
});

const twoSpeakers = (count = 2) => ({
  contents: [{ parts: [{ text: 'Joe: How is it going?\nJane: Not too bad, how about you?' }] }],
  generationConfig: {
    responseModalities: ['AUDIO'],
    speechConfig: {
      multiSpeakerVoiceConfig: {
        speakerVoiceConfigs: ['Joe', 'Jane', 'Jim']
          .slice(0, count)
          .map((speaker, i) => ({ speaker, voiceConfig: { prebuiltVoiceConfig: { voiceName: GEMINI_PREBUILT_VOICES[i] } } })),
      },
    },
  },
});

/** The 400 a body gets, as the ingress would produce it. */
function rejection(body: unknown): GatewayError {
  try {
    parseOrThrow(geminiGenerateRequest, body);
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('body was accepted');
}

describe('geminiGenerateRequest', () => {
  it('accepts a single-voice request and a two-speaker request', () => {
    expect(parseOrThrow(geminiGenerateRequest, singleVoice())).toEqual(singleVoice());
    expect(parseOrThrow(geminiGenerateRequest, twoSpeakers())).toEqual(twoSpeakers());
  });

  it('accepts and passes through what @google/genai sends besides the speech fields', () => {
    // The shape generateContentParametersToMldev produces when a caller fills the SDK's config.
    const sdkBody = {
      contents: [{ parts: [{ text: 'Read this slowly.' }], role: 'user' }],
      systemInstruction: { parts: [{ text: 'You are a calm narrator.' }], role: 'user' },
      safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }],
      labels: { team: 'audio' },
      generationConfig: {
        temperature: 0.7,
        topP: 0.9,
        seed: 7,
        maxOutputTokens: 2048,
        responseModalities: ['AUDIO'],
        speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Puck' } }, languageCode: 'en-US' },
        thinkingConfig: { thinkingBudget: 0 },
      },
      model: 'gemini-2.5-flash-preview-tts',
    };
    expect(parseOrThrow(geminiGenerateRequest, sdkBody)).toEqual(sdkBody);
  });

  it('reads snake_case field names as proto3 JSON allows, and sends them on in camelCase', () => {
    const parsed = parseOrThrow(geminiGenerateRequest, {
      contents: [{ parts: [{ text: 'hi' }] }],
      generation_config: {
        response_modalities: ['audio'],
        speech_config: { voice_config: { prebuilt_voice_config: { voice_name: 'Kore' } }, language_code: 'de-DE' },
      },
      labels: { cost_center: 'x' },
    });
    expect(parsed.generationConfig).toEqual({
      responseModalities: ['AUDIO'],
      speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } }, languageCode: 'de-DE' },
    });
    // Free-form values keep their keys.
    expect(parsed.labels).toEqual({ cost_center: 'x' });
  });

  it('refuses a cached content, which belongs to the project every caller shares, in either spelling', () => {
    for (const field of ['cachedContent', 'cached_content']) {
      const error = rejection({ ...singleVoice(), [field]: 'cachedContents/abc123' });
      expect(error.status, field).toBe(400);
      expect(error.param, field).toBe('cachedContent');
      expect(error.message).toMatch(/channel's project/);
    }
  });

  it("refuses what reaches the channel's project or a premium tier: a file in the system instruction, tools, serviceTier priority", () => {
    const file = rejection({ ...singleVoice(), systemInstruction: { parts: [{ fileData: { fileUri: 'https://generativelanguage.googleapis.com/v1beta/files/abc123' } }] } });
    expect(file.status).toBe(400);
    expect(file.param).toMatch(/^systemInstruction/);
    const tools = rejection({ ...singleVoice(), tools: [{ fileSearch: { fileSearchStoreNames: ['fileSearchStores/x'] } }] });
    expect([tools.status, tools.param]).toEqual([400, 'tools']);
    expect(tools.message).toMatch(/channel's project/);
    const tier = rejection({ ...singleVoice(), serviceTier: 'PRIORITY' });
    expect([tier.status, tier.param]).toEqual([400, 'serviceTier']);
    // A text system instruction is served as it comes.
    expect(parseOrThrow(geminiGenerateRequest, { ...singleVoice(), systemInstruction: { parts: [{ text: 'Speak slowly.' }] } }).systemInstruction).toEqual({ parts: [{ text: 'Speak slowly.' }] });
  });

  it('refuses an unknown voice, naming the field', () => {
    const body = singleVoice();
    body.generationConfig.speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName = 'Alexa';
    const error = rejection(body);
    expect(error.status).toBe(400);
    expect(error.param).toBe('generationConfig.speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName');
    expect(error.message).toContain('Alexa');
    expect(error.message).toContain('Zephyr');
  });

  it('refuses a missing generationConfig, naming it', () => {
    const { contents } = singleVoice();
    const error = rejection({ contents });
    expect(error.param).toBe('generationConfig');
  });

  it('refuses both voice configs at once', () => {
    const body = twoSpeakers() as ReturnType<typeof twoSpeakers> & Record<string, any>;
    (body.generationConfig.speechConfig as Record<string, unknown>).voiceConfig = { prebuiltVoiceConfig: { voiceName: 'Kore' } };
    const error = rejection(body);
    expect(error.param).toBe('generationConfig.speechConfig.multiSpeakerVoiceConfig');
    expect(error.message).toContain('not both');
  });

  it('refuses a speech config with no voice at all', () => {
    const body = singleVoice() as Record<string, any>;
    body.generationConfig.speechConfig = {};
    expect(rejection(body).param).toBe('generationConfig.speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName');
  });

  it('refuses three speakers (and one)', () => {
    expect(rejection(twoSpeakers(3)).param).toBe('generationConfig.speechConfig.multiSpeakerVoiceConfig.speakerVoiceConfigs');
    expect(rejection(twoSpeakers(1)).message).toContain('exactly two');
  });

  it('refuses an invalid speaker voice, naming its index', () => {
    const body = twoSpeakers();
    body.generationConfig.speechConfig.multiSpeakerVoiceConfig.speakerVoiceConfigs[1]!.voiceConfig.prebuiltVoiceConfig.voiceName = 'Nope' as never;
    expect(rejection(body).param).toBe(
      'generationConfig.speechConfig.multiSpeakerVoiceConfig.speakerVoiceConfigs[1].voiceConfig.prebuiltVoiceConfig.voiceName',
    );
  });

  it('requires AUDIO among the response modalities', () => {
    const body = singleVoice();
    body.generationConfig.responseModalities = ['TEXT'];
    expect(rejection(body).param).toBe('generationConfig.responseModalities');
  });

  it('refuses empty contents, non-text parts and unknown fields', () => {
    expect(rejection({ ...singleVoice(), contents: [] }).param).toBe('contents');
    expect(rejection({ ...singleVoice(), contents: [{ parts: [] }] }).param).toBe('contents[0].parts');
    expect(rejection({ ...singleVoice(), contents: [{ role: 'system', parts: [{ text: 'x' }] }] }).param).toBe('contents[0].role');
    const nonText = rejection({ ...singleVoice(), contents: [{ parts: [{ inlineData: { mimeType: 'audio/wav', data: '' } }] }] });
    expect(nonText.param).toBe('contents[0].parts[0].text');
    expect(nonText.message).toContain('text parts only');
    expect(rejection({ ...singleVoice(), promt: 'typo' }).param).toBe('promt');
  });

  it('collects the text to be spoken', () => {
    const text = geminiRequestText({ contents: [{ parts: [{ text: 'ab' }, { text: 'c' }] }, { parts: [{ text: 'd' }] }] });
    expect(text).toBe('abcd');
  });
});

describe('geminiGenerateResponse', () => {
  it('defaults safetyRatings to an empty array and completes usage, keeping unknown fields', () => {
    const reply = geminiGenerateResponse.parse({
      candidates: [
        {
          content: { role: 'model', parts: [{ inlineData: { mimeType: 'audio/L16;codec=pcm;rate=24000', data: 'AAAA' } }] },
          finishReason: 'STOP',
          index: 0,
        },
      ],
      usageMetadata: {
        promptTokenCount: 9,
        candidatesTokenCount: 48,
        promptTokensDetails: [{ modality: 'TEXT', tokenCount: 9 }],
      },
      modelVersion: 'gemini-2.5-flash-preview-tts',
      responseId: 'abc',
      somethingNew: true,
    });
    expect(reply.candidates?.[0]?.safetyRatings).toEqual([]);
    expect(reply.usageMetadata).toMatchObject({ promptTokenCount: 9, candidatesTokenCount: 48, totalTokenCount: 57 });
    expect(reply.usageMetadata?.promptTokensDetails).toEqual([{ modality: 'TEXT', tokenCount: 9 }]);
    expect(reply).toHaveProperty('somethingNew', true);
    expect(geminiInlineAudio(reply)).toEqual([{ mimeType: 'audio/L16;codec=pcm;rate=24000', data: 'AAAA' }]);
  });

  it('renders Gemini error bodies', () => {
    expect(geminiError(429, 'slow down')).toEqual({ error: { code: 429, message: 'slow down', status: 'RESOURCE_EXHAUSTED' } });
  });
});
