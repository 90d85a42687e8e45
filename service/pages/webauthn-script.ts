// The pages' one script: the browser half of passkeys and security keys (WebAuthn). Served from our
// own origin at a content-hashed path (CSP `script-src 'self'`: no inline script), it turns the JSON
// options the server sends into navigator.credentials calls and the credential back into JSON
// (base64url for every binary field, the shape @simplewebauthn/server reads), puts it in the form's
// hidden `credential` field and submits the form: the server decides, the page is still a form post.
// Written by hand instead of @simplewebauthn/browser: the (de)serialisation is a few lines, and a
// dependency and a bundler step would be more than the job.
import { createHash } from 'node:crypto';

const SOURCE = `'use strict';
(function () {
  var supported = typeof window.PublicKeyCredential === 'function' && !!navigator.credentials;

  function toBuffer(b64url) {
    var b64 = b64url.replace(/-/g, '+').replace(/_/g, '/');
    while (b64.length % 4) b64 += '=';
    var bin = atob(b64);
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return bytes.buffer;
  }

  function toBase64url(buffer) {
    var bytes = new Uint8Array(buffer);
    var bin = '';
    for (var i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]);
    return btoa(bin).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  }

  function descriptors(list) {
    return (list || []).map(function (c) {
      return { type: 'public-key', id: toBuffer(c.id), transports: c.transports };
    });
  }

  function creationOptions(o) {
    var options = Object.assign({}, o, {
      challenge: toBuffer(o.challenge),
      user: Object.assign({}, o.user, { id: toBuffer(o.user.id) }),
      excludeCredentials: descriptors(o.excludeCredentials),
    });
    delete options.hints;
    return options;
  }

  function requestOptions(o) {
    var options = Object.assign({}, o, { challenge: toBuffer(o.challenge), allowCredentials: descriptors(o.allowCredentials) });
    delete options.hints;
    return options;
  }

  function credentialJSON(credential) {
    var r = credential.response;
    var response = { clientDataJSON: toBase64url(r.clientDataJSON) };
    if (r.attestationObject) {
      response.attestationObject = toBase64url(r.attestationObject);
      if (typeof r.getTransports === 'function') response.transports = r.getTransports();
    } else {
      response.authenticatorData = toBase64url(r.authenticatorData);
      response.signature = toBase64url(r.signature);
      if (r.userHandle) response.userHandle = toBase64url(r.userHandle);
    }
    return JSON.stringify({
      id: credential.id,
      rawId: toBase64url(credential.rawId),
      type: credential.type,
      response: response,
      clientExtensionResults: credential.getClientExtensionResults(),
      authenticatorAttachment: credential.authenticatorAttachment || undefined,
    });
  }

  function showError(form, message) {
    var box = form.querySelector('[data-webauthn-error]');
    if (!box) return;
    box.textContent = message;
    box.hidden = false;
  }

  function messageOf(err, registering) {
    var name = err && err.name;
    if (name === 'NotAllowedError' || name === 'AbortError')
      return 'The request was cancelled or timed out. Try again, or sign in another way.';
    if (name === 'InvalidStateError' && registering)
      return 'This passkey or security key is already registered to your account.';
    if (name === 'SecurityError') return 'This site cannot use passkeys at this address.';
    if (name === 'NotSupportedError') return 'This authenticator does not support what this site needs.';
    return (err && err.message) || 'Something went wrong. Try again.';
  }

  function fetchOptions(form, extra) {
    var body = new URLSearchParams();
    body.set('authenticity_token', form.elements.authenticity_token.value);
    Object.keys(extra || {}).forEach(function (k) { body.set(k, extra[k]); });
    return fetch(form.getAttribute('data-options-url'), {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: body.toString(),
    }).then(function (res) {
      return res.json().then(function (json) {
        if (!res.ok) throw new Error(json.message || 'The server refused to start. Reload the page and try again.');
        return json;
      });
    });
  }

  function finish(form, credential) {
    form.elements.credential.value = credentialJSON(credential);
    form.submit();
  }

  var conditional = null;

  function ceremony(form) {
    var registering = form.getAttribute('data-webauthn') === 'register';
    if (!supported) {
      showError(form, 'This browser does not support passkeys or security keys. Use another browser, or sign in another way.');
      return;
    }
    if (conditional) conditional.abort();
    var extra = registering ? {} : { purpose: form.elements.purpose.value };
    fetchOptions(form, extra)
      .then(function (options) {
        return registering
          ? navigator.credentials.create({ publicKey: creationOptions(options) })
          : navigator.credentials.get({ publicKey: requestOptions(options) });
      })
      .then(function (credential) { if (credential) finish(form, credential); })
      .catch(function (err) { showError(form, messageOf(err, registering)); });
  }

  function startConditional(form) {
    if (!supported || typeof PublicKeyCredential.isConditionalMediationAvailable !== 'function') return;
    PublicKeyCredential.isConditionalMediationAvailable().then(function (available) {
      if (!available) return;
      conditional = new AbortController();
      var signal = conditional.signal;
      fetchOptions(form, { purpose: 'passwordless' })
        .then(function (options) {
          return navigator.credentials.get({ mediation: 'conditional', publicKey: requestOptions(options), signal: signal });
        })
        .then(function (credential) { if (credential) finish(form, credential); })
        .catch(function (err) { if (!signal.aborted) showError(form, messageOf(err, false)); });
    });
  }

  document.addEventListener('DOMContentLoaded', function () {
    var forms = document.querySelectorAll('form[data-webauthn]');
    for (var i = 0; i < forms.length; i++) {
      (function (form) {
        form.addEventListener('submit', function (event) {
          if (form.elements.credential.value) return;
          event.preventDefault();
          ceremony(form);
        });
        if (form.hasAttribute('data-conditional')) startConditional(form);
      })(forms[i]);
    }
    document.documentElement.setAttribute('data-webauthn-ready', supported ? 'yes' : 'unsupported');
  });
})();
`;

export const WEBAUTHN_SCRIPT_SOURCE = SOURCE;
export const WEBAUTHN_SCRIPT_HASH = createHash('sha256').update(SOURCE).digest('hex').slice(0, 16);
export const WEBAUTHN_SCRIPT_PATH = `/-/assets/webauthn-${WEBAUTHN_SCRIPT_HASH}.js`;
