import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('TALLY_OTLP_HOLD_SECONDS', () => {
  it('defaults to an hour and takes 1 to 86,400 seconds', () => {
    expect(loadConfig({}).otlpHoldSeconds).toBe(3600);
    expect(loadConfig({ TALLY_OTLP_HOLD_SECONDS: '90' }).otlpHoldSeconds).toBe(90);
    for (const bad of ['0', '86401', 'soon', '1.5']) {
      expect(() => loadConfig({ TALLY_OTLP_HOLD_SECONDS: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ TALLY_OTLP_HOLD_SECONDS: bad })).toThrow(/^TALLY_OTLP_HOLD_SECONDS must be/);
    }
  });
});
