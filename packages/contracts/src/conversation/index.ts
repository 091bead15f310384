export * from './request.ts';
export * from './reply.ts';
export * from './stream.ts';
