/**
 * The key tests encrypt secrets at rest with (TALLY_SECRET_KEY): fixed, so a test can open what
 * another process sealed. 32 bytes in base64.
 */
export const TEST_SECRET_KEY = Buffer.alloc(32, 7).toString('base64');
