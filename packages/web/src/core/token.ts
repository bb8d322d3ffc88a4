import { randomBytes } from 'node:crypto'

/** A new random access token: 32 bytes from the OS CSPRNG, base64url (43 characters). */
export function newToken(): string {
  return randomBytes(32).toString('base64url')
}
