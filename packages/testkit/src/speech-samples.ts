/**
 * Speech requests more than one suite sends, in the Gemini wire format (and so in
 * `@google/genai`'s `config.speechConfig`).
 */

/** A dialogue for two speakers, and the speech config that voices Joe with Kore and Jane with Puck. */
export const twoSpeakers = {
  text: 'Joe: How is it going today Jane?\nJane: Not too bad, how about you?',
  speechConfig: {
    languageCode: 'en-US',
    multiSpeakerVoiceConfig: {
      speakerVoiceConfigs: [
        { speaker: 'Joe', voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } },
        { speaker: 'Jane', voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Puck' } } },
      ],
    },
  },
};
