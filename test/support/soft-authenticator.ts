// A software WebAuthn authenticator for the tests that talk to the routes without a browser: it
// makes ES256 credentials and answers registration and authentication options the way a browser
// and a CTAP2 authenticator together would (attestation `none`), and lets a test bend any part of
// it (origin, challenge, counter, flags, the bytes themselves). Its CBOR encoder covers what
// WebAuthn needs: unsigned and negative integers, byte and text strings, maps.
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';

type Cbor = number | string | Uint8Array | Map<number | string, Cbor>;

function head(major: number, n: number): Buffer {
  if (n < 24) return Buffer.from([(major << 5) | n]);
  if (n < 256) return Buffer.from([(major << 5) | 24, n]);
  if (n < 65536) return Buffer.from([(major << 5) | 25, n >> 8, n & 255]);
  const b = Buffer.alloc(5);
  b[0] = (major << 5) | 26;
  b.writeUInt32BE(n, 1);
  return b;
}

export function cbor(value: Cbor): Buffer {
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'utf8');
    return Buffer.concat([head(3, bytes.length), bytes]);
  }
  if (value instanceof Uint8Array) return Buffer.concat([head(2, value.length), Buffer.from(value)]);
  const parts = [head(5, value.size)];
  for (const [k, v] of value) parts.push(cbor(k), cbor(v));
  return Buffer.concat(parts);
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest();
const b64url = (data: Buffer | Uint8Array) => Buffer.from(data).toString('base64url');

export interface SoftCredential {
  id: Buffer;
  privateKey: KeyObject;
  publicKeyCose: Buffer;
  counter: number;
  userHandle?: string;
}

export interface AuthenticatorOptions {
  /** The origin the "browser" writes into clientDataJSON. */
  origin: string;
  /** User verification performed (the UV flag). */
  uv?: boolean;
  /** Backup eligible (a passkey that may be synced) and backed up. */
  backupEligible?: boolean;
  /** Counter step per use (0: an authenticator without a counter). */
  counterStep?: number;
}

export class SoftAuthenticator {
  readonly credentials: SoftCredential[] = [];
  constructor(readonly options: AuthenticatorOptions) {}

  private flags(attested: boolean, overrides: { uv?: boolean; be?: boolean } = {}) {
    const uv = overrides.uv ?? this.options.uv ?? true;
    const be = overrides.be ?? this.options.backupEligible ?? false;
    return 0x01 | (uv ? 0x04 : 0) | (be ? 0x08 | 0x10 : 0) | (attested ? 0x40 : 0);
  }

  /** navigator.credentials.create() for these options, as RegistrationResponseJSON. */
  create(
    options: { challenge: string; rp: { id: string }; user: { id: string } },
    bend: {
      origin?: string;
      challenge?: string;
      type?: string;
      rpId?: string;
      attestationObject?: string;
      /** Answer with this existing credential (its id and key) instead of a new one. */
      reuse?: number;
    } = {},
  ) {
    const { id, publicKeyCose } =
      bend.reuse === undefined ? this.newCredential(options.user.id) : this.credentials[bend.reuse];
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(id.length);
    const authData = Buffer.concat([
      sha256(bend.rpId ?? options.rp.id),
      Buffer.from([this.flags(true)]),
      Buffer.alloc(4),
      Buffer.alloc(16), // aaguid: none
      idLength,
      id,
      publicKeyCose,
    ]);
    const clientDataJSON = Buffer.from(
      JSON.stringify({
        type: bend.type ?? 'webauthn.create',
        challenge: bend.challenge ?? options.challenge,
        origin: bend.origin ?? this.options.origin,
        crossOrigin: false,
      }),
    );
    const attestationObject = cbor(
      new Map<string, Cbor>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]),
    );
    return {
      id: b64url(id),
      rawId: b64url(id),
      type: 'public-key',
      response: {
        clientDataJSON: b64url(clientDataJSON),
        attestationObject: bend.attestationObject ?? b64url(attestationObject),
        transports: ['internal'],
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }

  private newCredential(userHandle: string): SoftCredential {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' });
    const publicKeyCose = cbor(
      new Map<number, Cbor>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x as string, 'base64url')],
        [-3, Buffer.from(jwk.y as string, 'base64url')],
      ]),
    );
    const credential: SoftCredential = { id: randomBytes(32), privateKey, publicKeyCose, counter: 0, userHandle };
    this.credentials.push(credential);
    return credential;
  }

  /** navigator.credentials.get() with this authenticator's credential `index`, as AuthenticationResponseJSON. */
  get(
    options: { challenge: string; rpId: string },
    bend: {
      index?: number;
      origin?: string;
      challenge?: string;
      counter?: number;
      uv?: boolean;
      be?: boolean;
      credentialId?: string;
    } = {},
  ) {
    const credential = this.credentials[bend.index ?? this.credentials.length - 1];
    credential.counter = bend.counter ?? credential.counter + (this.options.counterStep ?? 1);
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(credential.counter);
    const authData = Buffer.concat([
      sha256(options.rpId),
      Buffer.from([this.flags(false, { uv: bend.uv, be: bend.be })]),
      counter,
    ]);
    const clientDataJSON = Buffer.from(
      JSON.stringify({
        type: 'webauthn.get',
        challenge: bend.challenge ?? options.challenge,
        origin: bend.origin ?? this.options.origin,
        crossOrigin: false,
      }),
    );
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientDataJSON)]), credential.privateKey);
    const id = bend.credentialId ?? b64url(credential.id);
    return {
      id,
      rawId: id,
      type: 'public-key',
      response: {
        clientDataJSON: b64url(clientDataJSON),
        authenticatorData: b64url(authData),
        signature: b64url(signature),
        ...(credential.userHandle ? { userHandle: credential.userHandle } : {}),
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }
}
