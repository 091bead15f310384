import { describe, expect, it } from 'vitest';
import { otlpProtocol, tracesExporters } from './start-tracing.ts';

describe('tracing configuration', () => {
  it('is off with no OTEL_* variable, with the exporter none, and with the SDK disabled', () => {
    expect(tracesExporters({})).toEqual([]);
    expect(tracesExporters({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toEqual([]);
    expect(tracesExporters({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' })).toEqual([]);
  });

  it('exports over OTLP when an endpoint is set, or the exporters named', () => {
    expect(tracesExporters({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toEqual(['otlp']);
    expect(tracesExporters({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toEqual(['otlp']);
    expect(tracesExporters({ OTEL_TRACES_EXPORTER: 'otlp, console' })).toEqual(['otlp', 'console']);
  });

  it('speaks OTLP over http/protobuf unless told grpc or http/json, the traces\' own setting first', () => {
    expect(otlpProtocol({})).toBe('http/protobuf');
    expect(otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toBe('grpc');
    expect(otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' })).toBe('http/json');
    expect(() => otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' })).toThrow(/thrift/);
  });
});
