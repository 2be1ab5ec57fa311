import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError, type ErrorCode } from '../../../src/errors.js';
import {
  checkGetAccept,
  checkPostAccept,
  checkPostContentType,
  isEventStream,
  isJson,
} from '../../../src/mcp/media-type.js';

function rejectsWith(code: ErrorCode) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof GatewayError, String(error));
    assert.equal(error.code, code);
    return true;
  };
}

describe('checkPostContentType', () => {
  it('accepts application/json with or without a UTF-8 charset, in any case', () => {
    for (const value of [
      'application/json',
      'application/json; charset=utf-8',
      'Application/JSON; Charset="UTF-8"',
      'application/json;charset=utf8',
      'application/json; foo=bar',
    ]) {
      checkPostContentType({ 'content-type': value });
    }
  });

  it('answers 415 for anything else', () => {
    for (const value of [
      undefined,
      '',
      'text/plain',
      'application/jsonx',
      'application/json-seq',
      'text/event-stream',
      'application/*',
      '*/*',
      'garbage',
      'application/json; charset=latin1',
      'application/json;',
      'application/json; charset',
      'multipart/form-data; boundary=x application/json',
    ]) {
      assert.throws(
        () => checkPostContentType({ 'content-type': value }),
        rejectsWith('TG_ERR_UNSUPPORTED_MEDIA_TYPE'),
        String(value),
      );
    }
  });
});

describe('checkPostAccept', () => {
  it('accepts both types listed explicitly, in any order, case or with parameters', () => {
    for (const value of [
      'application/json, text/event-stream',
      'text/event-stream, application/json',
      'Application/JSON;q=0.5, TEXT/Event-Stream',
      'application/json;charset=utf-8, text/event-stream;q=0.1',
      'text/html, application/json, text/event-stream, */*;q=0.1',
    ]) {
      checkPostAccept({ accept: value });
    }
  });

  it('answers 406 when either is missing, only matched by a wildcard, or refused with q=0', () => {
    for (const value of [
      undefined,
      '',
      '*/*',
      'application/json',
      'text/event-stream',
      'application/json, */*',
      'application/*, text/*',
      'application/json, text/*',
      'application/json;q=0, text/event-stream',
      'application/json, text/event-stream;q=0.0',
      'application/json;q=abc, text/event-stream',
      'garbage;;;,,',
      'application/jsonx, text/event-streams',
    ]) {
      assert.throws(() => checkPostAccept({ accept: value }), rejectsWith('TG_ERR_NOT_ACCEPTABLE'), String(value));
    }
  });
});

describe('checkGetAccept', () => {
  it('needs text/event-stream listed explicitly', () => {
    checkGetAccept({ accept: 'text/event-stream' });
    checkGetAccept({ accept: 'application/json, Text/Event-Stream' });
    for (const value of [undefined, '*/*', 'text/*', 'application/json', 'text/event-stream;q=0', 'nonsense']) {
      assert.throws(() => checkGetAccept({ accept: value }), rejectsWith('TG_ERR_NOT_ACCEPTABLE'), String(value));
    }
  });
});

describe('reply type tests', () => {
  it('isJson parses rather than matching substrings', () => {
    assert.equal(isJson('application/json'), true);
    assert.equal(isJson('application/json; charset=utf-8'), true);
    assert.equal(isJson('APPLICATION/JSON'), true);
    assert.equal(isJson('application/jsonx'), false);
    assert.equal(isJson('text/plain; x="application/json"'), false);
    assert.equal(isJson('garbage'), false);
    assert.equal(isJson(undefined), false);
  });

  it('isEventStream parses rather than matching substrings', () => {
    assert.equal(isEventStream('text/event-stream'), true);
    assert.equal(isEventStream('text/event-stream; charset=utf-8'), true);
    assert.equal(isEventStream('Text/Event-Stream'), true);
    assert.equal(isEventStream('text/event-streams'), false);
    assert.equal(isEventStream('application/json; profile="text/event-stream"'), false);
    assert.equal(isEventStream(''), false);
    assert.equal(isEventStream(undefined), false);
  });
});
