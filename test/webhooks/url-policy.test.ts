import { describe, expect, it } from 'vitest';
import { checkLiteralHost, checkWebhookUrl, isPrivateAddress } from '../../src/webhooks/url-policy.js';

describe('webhook URL policy', () => {
  it.each([
    '127.0.0.1',
    '10.0.0.1',
    '172.16.5.4',
    '192.168.0.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '::1',
    '::',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    '::7f00:1',
    '::127.0.0.1',
    '::a9fe:a9fe',
    '::ffff:0:7f00:1',
    '::ffff:0:a00:1',
    '::ffff:0:127.0.0.1',
    '2002:7f00:1::',
    '2002:a9fe:a9fe::1',
    '2002:c0a8:101:5::1',
  ])('treats %s as private', (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '2002:808:808::1',
    '::ffff:0:808:808',
  ])('treats %s as public', (address) => {
    expect(isPrivateAddress(address)).toBe(false);
  });

  it('allows http and private hosts only when private networks are allowed', () => {
    expect(() => checkWebhookUrl('http://127.0.0.1:9000/x', false)).toThrow();
    expect(checkWebhookUrl('http://127.0.0.1:9000/x', true)).toBe('http://127.0.0.1:9000/x');
    expect(checkWebhookUrl('https://hooks.example.com/a?b=1', false)).toBe('https://hooks.example.com/a?b=1');
    expect(() => checkWebhookUrl('https://user:pw@hooks.example.com/', false)).toThrow();
    expect(() => checkWebhookUrl('ftp://hooks.example.com/', true)).toThrow();
  });

  it.each([
    'https://[::7f00:1]/x',
    'https://[::ffff:0:7f00:1]/x',
    'https://[2002:7f00:1::]/x',
    'https://[2002:a9fe:a9fe::]/x',
  ])('refuses %s at creation and at delivery', (url) => {
    expect(() => checkWebhookUrl(url, false)).toThrow(/private, loopback or link-local/);
    expect(() => checkLiteralHost(new URL(url), false)).toThrow(/non-public address/);
    expect(() => checkLiteralHost(new URL(url), true)).not.toThrow();
  });

  it.each(['https://localhost./x', 'https://foo.localhost./x', 'https://LOCALHOST./x'])(
    'refuses %s: a trailing dot does not hide localhost',
    (url) => {
      expect(() => checkWebhookUrl(url, false)).toThrow(/private, loopback or link-local/);
      expect(checkWebhookUrl(url, true)).toBe(new URL(url).toString());
    },
  );
});
