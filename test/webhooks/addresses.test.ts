/**
 * Webhook addresses: IPv4 carried inside IPv6 (mapped, compatible, translated, 6to4, NAT64, Teredo)
 * is judged as IPv4, in URL literals and in what DNS answers, at creation and at delivery.
 */
import { expect } from 'chai';
import { addressBytes, isPrivateAddress, urlProblem } from '../../src/webhooks/address.js';
import { Dispatcher } from '../../src/webhooks/dispatcher.js';
import { api, appWith, errorOf, newTeam, testEnv, describeOnEachRegistry } from '../helpers/context.js';
import { parkedDelivery } from './parked.js';

/** Each way of carrying an IPv4 address in IPv6, as written with that IPv4 inside. */
const EMBEDDINGS: [string, (v4: string) => string][] = [
  ['IPv4-mapped ::ffff:0:0/96', (v4) => `::ffff:${v4}`],
  ['IPv4-compatible ::/96', (v4) => `::${v4}`],
  ['IPv4-translated ::ffff:0:0:0/96', (v4) => `::ffff:0:${v4}`],
  ['6to4 2002::/16', (v4) => `2002:${hex(v4)}::`],
  ['6to4 2002::/16, with a subnet and host', (v4) => `2002:${hex(v4)}:1:0:0:0:1`],
  ['NAT64 64:ff9b::/96', (v4) => `64:ff9b::${hex(v4)}`],
  ['NAT64 64:ff9b::/96, dotted', (v4) => `64:FF9B::${v4}`],
  ['NAT64 local-use 64:ff9b:1::/48', (v4) => `64:ff9b:1::${hex(v4)}`],
  ['NAT64 local-use, a /96 inside it', (v4) => `64:ff9b:1:a:b:0:${hex(v4)}`],
  ['Teredo 2001::/32, the server', (v4) => `2001:0:${hex(v4)}:8000:63bf:f7f7:f7f7`],
  ['Teredo 2001::/32, the client (inverted)', (v4) => `2001:0:808:808:8000:63bf:${hex(v4, 0xff)}`],
];

/** An IPv4 address as two IPv6 groups, each byte XOR `flip`. */
function hex(v4: string, flip = 0): string {
  const [a, b, c, d] = v4.split('.').map((n) => Number(n) ^ flip) as [number, number, number, number];
  return `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

const PRIVATE_V4 = ['127.0.0.1', '10.0.0.1', '169.254.169.254', '192.168.1.1', '100.64.0.1', '0.0.0.0'];
const PUBLIC_V4 = ['8.8.8.8', '1.1.1.1'];

/** An app with the defaults a deployment has: https only, no private addresses. */
const strictApp = () =>
  appWith([], { config: { ...testEnv().deps.config, webhooks: { ...testEnv().deps.config.webhooks, allowHttp: false, allowPrivate: false } } });

describeOnEachRegistry('webhook addresses', function () {
  this.timeout(30_000);

  describe('isPrivateAddress', () => {
    for (const [form, write] of EMBEDDINGS) {
      it(`${form}: refused with a private IPv4 inside, allowed with a public one`, () => {
        for (const v4 of PRIVATE_V4) expect(isPrivateAddress(write(v4)), write(v4)).to.equal(true);
        for (const v4 of PUBLIC_V4) expect(isPrivateAddress(write(v4)), write(v4)).to.equal(false);
      });
    }

    it('the forms of issue 27, as written there', () => {
      for (const ip of ['::127.0.0.1', '::ffff:0:127.0.0.1', '2002:7f00:1::', '64:ff9b:1::7f00:1']) expect(isPrivateAddress(ip), ip).to.equal(true);
      // RFC 4380's example: server 65.54.227.120, client 192.0.2.45 (documentation, reserved).
      expect(isPrivateAddress('2001:0:4136:e378:8000:63bf:3fff:fdd2')).to.equal(true);
    });

    it('plain IPv4 and IPv6, in any case, with a zone id, compressed or not', () => {
      for (const ip of ['127.0.0.1', '10.0.0.1', '172.16.0.1', '255.255.255.255', '::1', '0:0:0:0:0:0:0:1', '::', 'fe80::1', 'FE80::1%eth0', 'fd00:ec2::254', 'ff02::1', '2001:db8::1']) {
        expect(isPrivateAddress(ip), ip).to.equal(true);
      }
      for (const ip of ['8.8.8.8', '172.32.0.1', '2606:4700:4700::1111', '2606:4700:4700:0:0:0:0:1111', '2A00:1450:4001:80B::200E', '2001:4860:4860::8888']) {
        expect(isPrivateAddress(ip), ip).to.equal(false);
      }
    });

    it('text that is not an address is refused, never guessed at', () => {
      for (const text of ['', 'localhost', '1::2::3', ':::', '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7', '12345::', '::1.2.3', '::256.0.0.1', '::8.8.8.8:1', '010.0.0.1', '0x7f.0.0.1', '8.8.8', '[::1]', 'fe80::1%', 'g::1']) {
        expect(addressBytes(text), text).to.equal(undefined);
        expect(isPrivateAddress(text), text).to.equal(true);
      }
    });

    it('parses to 16 bytes: compression, an embedded dotted quad, a zone id', () => {
      expect([...addressBytes('1:2::ff:1.2.3.4%eth0')!]).to.deep.equal([0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0xff, 1, 2, 3, 4]);
      expect([...addressBytes('ABCD:ef01::')!]).to.deep.equal([0xab, 0xcd, 0xef, 0x01, ...new Array(12).fill(0)]);
      expect([...addressBytes('1:2:3:4:5:6:7::')!]).to.deep.equal([0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 0]);
    });

    it('what DNS answers goes through the same check', async () => {
      const strict = { allowHttp: false, allowPrivate: false };
      for (const answer of ['::ffff:0:a00:1', '64:ff9b::7f00:1', '2002:a9fe:a9fe::']) {
        expect(await urlProblem('https://hooks.example.com/x', strict, async () => ['93.184.216.34', answer]), answer).to.include(answer);
      }
      expect(await urlProblem('https://hooks.example.com/x', strict, async () => ['64:ff9b::808:808', '2002:808:808::'])).to.equal(undefined);
    });
  });

  describe('the webhook-create route, with the default policy', () => {
    for (const [form, write] of EMBEDDINGS) {
      it(`${form}: a URL with a private IPv4 inside is a 400 naming url; a public one is created`, async () => {
        const app = strictApp();
        const team = await newTeam();
        const refused = await api(app).post('/api/v1/webhooks').set(...team.auth).send({ url: `https://[${write('127.0.0.1')}]/hook`, events: ['alert.opened'] });
        expect(refused.status, JSON.stringify(refused.body)).to.equal(400);
        const error = errorOf(refused.body);
        expect(error.code).to.equal('validation_failed');
        expect((error.details as { field: string }[]).map((d) => d.field)).to.deep.equal(['url']);
        const url = `https://[${write('8.8.8.8')}]/hook`;
        const created = await api(app).post('/api/v1/webhooks').set(...team.auth).send({ url, events: ['alert.opened'] });
        expect(created.status, JSON.stringify(created.body)).to.equal(201);
      });
    }

    it('plain literals: loopback and link-local IPv6 refused, public IPv6 and IPv4 created', async () => {
      const app = strictApp();
      const team = await newTeam();
      for (const url of ['https://[::1]/x', 'https://[fe80::1]/x', 'https://[::]/x', 'https://127.0.0.1/x', 'https://0x7f000001/x']) {
        const res = await api(app).post('/api/v1/webhooks').set(...team.auth).send({ url, events: ['alert.opened'] }).expect(400);
        expect(errorOf(res.body).details, url).to.deep.equal([{ field: 'url', message: (errorOf(res.body).details as { message: string }[])[0]!.message }]);
      }
      for (const url of ['https://[2606:4700:4700::1111]/x', 'https://8.8.8.8/x']) {
        await api(app).post('/api/v1/webhooks').set(...team.auth).send({ url, events: ['alert.opened'] }).expect(201);
      }
    });
  });

  describe('at delivery time', () => {
    it('a name that now resolves to IPv4 inside IPv6 is refused, checked and again as the connection is made', async () => {
      const env = testEnv();
      const strict = { ...env.config.webhooks, allowPrivate: false };
      for (const [answers, says] of [
        [() => ['::ffff:0:127.0.0.1'], 'WEBHOOK_ALLOW_PRIVATE'],
        [(n: number) => (n === 1 ? ['93.184.216.34'] : ['::127.0.0.1']), 'no public address'],
      ] as const) {
        let lookups = 0;
        const dispatcher = new Dispatcher(env.deps.db, env.deps.secrets, strict, env.deps.logger, {
          publicUrl: 'http://spendscope.test',
          thread: 'main',
          resolver: async () => answers(++lookups),
        });
        const outcome = await dispatcher.attemptNow((await parkedDelivery('http://hooks.example.com:9/hook')).deliveryId);
        await dispatcher.close();
        expect(outcome).to.include({ delivered: false, statusCode: null });
        expect(outcome!.error).to.include(says);
      }
    });
  });
});
