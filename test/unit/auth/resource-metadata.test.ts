import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bearerChallenge } from '../../../src/auth/challenge.js';
import { buildResourceMetadata, canonicalResourceUri, describeResource } from '../../../src/auth/resource-metadata.js';

describe('protected resources', () => {
  it('derives the canonical resource URI from publicUrl and the route path', () => {
    assert.equal(canonicalResourceUri('https://MCP.Example.com', '/mcp'), 'https://mcp.example.com/mcp');
    assert.equal(canonicalResourceUri('https://mcp.example.com/', '/mcp/'), 'https://mcp.example.com/mcp');
    assert.equal(canonicalResourceUri('https://example.com/gw', '/mcp'), 'https://example.com/gw/mcp');
    assert.equal(canonicalResourceUri('https://mcp.example.com:443', '/'), 'https://mcp.example.com');
    assert.equal(canonicalResourceUri('http://127.0.0.1:8080', '/a/b'), 'http://127.0.0.1:8080/a/b');
  });

  it('puts the metadata document at the well-known path before the resource path (RFC 9728 §3.1)', () => {
    assert.deepEqual(describeResource('https://mcp.example.com', { path: '/mcp', scopes: ['s'] }), {
      resource: 'https://mcp.example.com/mcp',
      metadataUrl: 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp',
      metadataPath: '/.well-known/oauth-protected-resource/mcp',
      scopes: ['s'],
    });
    assert.equal(describeResource('https://mcp.example.com', { path: '/', scopes: [] }).metadataPath, '/.well-known/oauth-protected-resource');
  });

  it('builds the metadata document', () => {
    const resource = describeResource('https://mcp.example.com', { path: '/mcp', scopes: [] });
    assert.deepEqual(buildResourceMetadata(resource, ['https://a.example']), {
      resource: 'https://mcp.example.com/mcp',
      authorization_servers: ['https://a.example'],
      bearer_methods_supported: ['header'],
    });
  });
});

describe('bearerChallenge', () => {
  const resourceMetadata = 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp';

  it('names only the metadata (and scopes) when no token was sent', () => {
    assert.equal(bearerChallenge({ resourceMetadata }), `Bearer resource_metadata="${resourceMetadata}"`);
    assert.equal(bearerChallenge({ resourceMetadata, scopes: ['a', 'b'] }), `Bearer scope="a b", resource_metadata="${resourceMetadata}"`);
  });

  it('adds the error and a description', () => {
    assert.equal(
      bearerChallenge({ resourceMetadata, error: 'insufficient_scope', description: 'needs "more"\\', scopes: ['a'] }),
      `Bearer error="insufficient_scope", error_description="needs \\"more\\"\\\\", scope="a", resource_metadata="${resourceMetadata}"`,
    );
  });
});
