import { describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from '../../src/accounts/passwords.js';
import { isRole, roleAtLeast } from '../../src/accounts/roles.js';

describe('passwords', () => {
  it('verifies the password it hashed and nothing else', async () => {
    const stored = await hashPassword('correct horse battery staple');
    expect(stored).toMatch(/^scrypt\$32768\$8\$1\$[\w-]+\$[\w-]+$/);
    expect(await verifyPassword('correct horse battery staple', stored)).toBe(true);
    expect(await verifyPassword('correct horse battery stapl', stored)).toBe(false);
  });

  it('salts each hash', async () => {
    const [a, b] = await Promise.all([hashPassword('same password'), hashPassword('same password')]);
    expect(a).not.toBe(b);
  });

  it('answers false for a malformed stored text', async () => {
    for (const stored of [
      '',
      'scrypt$',
      'bcrypt$1$2$3$4$5',
      'scrypt$x$8$1$aa$bb',
      'scrypt$32768$8$1$aa$bb',
    ]) {
      expect(await verifyPassword('whatever', stored)).toBe(false);
    }
  });
});

describe('roles', () => {
  it('orders owner over admin over analyst', () => {
    expect(roleAtLeast('owner', 'admin')).toBe(true);
    expect(roleAtLeast('admin', 'owner')).toBe(false);
    expect(roleAtLeast('analyst', 'analyst')).toBe(true);
    expect(roleAtLeast('analyst', 'admin')).toBe(false);
    expect(isRole('owner')).toBe(true);
    expect(isRole('root')).toBe(false);
  });
});
