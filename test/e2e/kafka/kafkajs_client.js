#!/usr/bin/node
// kafkajs (2.2.4, installed here by scripts/install-deps.sh) against moonmqd's Kafka listener, for
// test/e2e/kafka_e2e_test.cpp. Prints what it saw as JSON lines on stdout; exits 1 when the client reports an error.
//
//   node kafkajs_client.js produce BOOTSTRAP TOPIC PARTITIONS COUNT
//   node kafkajs_client.js admin BOOTSTRAP TOPIC
//   node kafkajs_client.js group BOOTSTRAP GROUP TOPIC IDLE
//   node kafkajs_client.js txn BOOTSTRAP TOPIC PARTITIONS TRANSACTIONS TXN GROUP
//   node kafkajs_client.js txn-copy BOOTSTRAP IN OUT GROUP TXN COUNT
//
// BOOTSTRAP is host:port, or the JSON object of librdkafka settings clients.py takes (bootstrap.servers,
// security.protocol, sasl.mechanism, sasl.username, sasl.password, ssl.ca.location), translated to kafkajs's.
// It creates TOPIC (admin), sends COUNT records with an idempotent producer (acks -1; keys "k<i>", a header, partition
// i % PARTITIONS) in batches of ten, one line per acknowledged batch, then lists the topic's metadata and offsets.
// `admin` grows an existing TOPIC by one partition, describes its configs and deletes it.
// `txn` runs TRANSACTIONS transactions of ten records (keys "k<i>", partition i % PARTITIONS) with transactional id
// TXN, each also committing GROUP's offset of partition 0 (the transaction's number); every third is aborted.
// `txn-copy` copies IN to OUT exactly once as a member of GROUP: each fetched batch's copies (same partition and key,
// value "copy:" + value) and the consumer's offsets in one transaction, until COUNT records were copied.
// `group` consumes TOPIC from the beginning as a member of GROUP (session 6 s, heartbeat 1 s, kafkajs's own commits),
// one line per record, until IDLE seconds pass without one after the first.
'use strict';
const fs = require('fs');
const { Kafka, logLevel } = require('./node_modules/kafkajs');

function config(bootstrap) {
  const s = bootstrap.startsWith('{') ? JSON.parse(bootstrap) : { 'bootstrap.servers': bootstrap };
  const out = { clientId: 'moonmq-e2e', brokers: s['bootstrap.servers'].split(','), connectionTimeout: 5000,
                retry: { retries: 8 },
                logLevel: logLevel.ERROR,
                logCreator: () => ({ level, log }) => process.stderr.write(JSON.stringify(log) + '\n') };
  const protocol = (s['security.protocol'] || 'PLAINTEXT').toUpperCase();
  if (protocol.endsWith('SSL')) {
    out.ssl = { rejectUnauthorized: true, checkServerIdentity: () => undefined };
    if (s['ssl.ca.location']) out.ssl.ca = [fs.readFileSync(s['ssl.ca.location'], 'utf8')];
  }
  if (protocol.startsWith('SASL')) {
    out.sasl = { mechanism: s['sasl.mechanism'].toLowerCase(), username: s['sasl.username'],
                 password: s['sasl.password'] };
  }
  return out;
}

async function admin([bootstrap, topic]) {
  const kafka = new Kafka(config(bootstrap));
  const a = kafka.admin();
  await a.connect();
  const before = (await a.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions.length;
  await a.createPartitions({ topicPartitions: [{ topic, count: before + 1 }] });
  const after = (await a.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions.length;
  console.log(JSON.stringify({ before, after }));
  const described = await a.describeConfigs({ resources: [{ type: 2, name: topic }], includeSynonyms: false });
  const configs = {};
  for (const c of described.resources[0].configEntries) configs[c.configName] = c.configValue;
  console.log(JSON.stringify({ configs }));
  await a.deleteTopics({ topics: [topic] });
  console.log(JSON.stringify({ listed: (await a.listTopics()).includes(topic) }));
  await a.disconnect();
}

async function produce([bootstrap, topic, partitions, count]) {
  const kafka = new Kafka(config(bootstrap));
  const admin = kafka.admin();
  await admin.connect();
  const created = await admin.createTopics({ topics: [{ topic, numPartitions: Number(partitions) }],
                                             waitForLeaders: true });
  console.log(JSON.stringify({ created }));

  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  for (let i = 0; i < Number(count); i += 10) {
    const messages = [];
    for (let j = i; j < Math.min(i + 10, Number(count)); ++j)
      messages.push({ key: `k${j}`, value: `kafkajs-${j}`, headers: { via: 'kafkajs' },
                      partition: j % Number(partitions), timestamp: String(5000 + j) });
    const acks = await producer.send({ topic, acks: -1, messages });
    for (const a of acks)
      console.log(JSON.stringify({ partition: a.partition, baseOffset: a.baseOffset, error: a.errorCode }));
  }
  await producer.disconnect();

  const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
  for (const p of metadata.topics[0].partitions)
    console.log(JSON.stringify({ metadata: p.partitionId, leader: p.leader }));
  for (const o of await admin.fetchTopicOffsets(topic))
    console.log(JSON.stringify({ offsets: o.partition, low: o.low, high: o.high }));
  await admin.disconnect();
}

async function group([bootstrap, groupId, topic, idle]) {
  const kafka = new Kafka(config(bootstrap));
  const consumer = kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 1000 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let last = null;
  consumer.on(consumer.events.GROUP_JOIN, (e) =>
    console.log(JSON.stringify({ assigned: (e.payload.memberAssignment[topic] || []).sort() })));
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      last = Date.now();
      console.log(JSON.stringify({ partition, offset: Number(message.offset), key: message.key.toString() }));
    },
  });
  await new Promise((resolve) => {
    const timer = setInterval(() => {
      if (last !== null && Date.now() - last > Number(idle) * 1000) {
        clearInterval(timer);
        resolve();
      }
    }, 200);
  });
  await consumer.disconnect();
}

async function txn([bootstrap, topic, partitions, transactions, txnId, groupId]) {
  const kafka = new Kafka(config(bootstrap));
  const producer = kafka.producer({ transactionalId: txnId, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  let i = 0;
  for (let n = 1; n <= Number(transactions); ++n) {
    const t = await producer.transaction();
    const messages = [];
    for (let k = 0; k < 10; ++k, ++i) messages.push({ key: `k${i}`, value: `value-${i}`, partition: i % Number(partitions) });
    for (const m of messages) await t.send({ topic, messages: [m] });
    // Every transaction commits the group's offset of partition 0 with it: the last commit's is what remains.
    await t.sendOffsets({ consumerGroupId: groupId, topics: [{ topic, partitions: [{ partition: 0, offset: String(n) }] }] });
    const abort = n % 3 === 0;
    if (abort) await t.abort();
    else await t.commit();
    console.log(JSON.stringify({ transaction: n, keys: messages.map((m) => m.key), committed: !abort }));
  }
  await producer.disconnect();
}

async function txnCopy([bootstrap, source, target, groupId, txnId, count]) {
  const kafka = new Kafka(config(bootstrap));
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 1000, readUncommitted: false });
  const producer = kafka.producer({ transactionalId: txnId, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  await consumer.connect();
  await consumer.subscribe({ topic: source, fromBeginning: true });
  let copied = 0;
  // One transaction per fetched batch: the copies and the consumer's offsets commit together.
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset }) => {
      if (batch.messages.length === 0) return;
      const t = await producer.transaction();
      try {
        for (const m of batch.messages)
          await t.send({ topic: target, messages: [{ key: m.key, value: 'copy:' + m.value.toString(), partition: batch.partition }] });
        const next = String(Number(batch.messages[batch.messages.length - 1].offset) + 1);
        await t.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: source, partitions: [{ partition: batch.partition, offset: next }] }] });
        await t.commit();
      } catch (e) {
        await t.abort();
        throw e;
      }
      for (const m of batch.messages) resolveOffset(m.offset);
      copied += batch.messages.length;
      console.log(JSON.stringify({ committed: batch.messages.length, partition: batch.partition, total: copied }));
    },
  });
  const deadline = Date.now() + 60000;
  while (copied < Number(count) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  await consumer.disconnect();
  await producer.disconnect();
  if (copied < Number(count)) throw new Error(`copied ${copied} of ${count}`);
}

const commands = { produce, admin, group, txn, 'txn-copy': txnCopy };
commands[process.argv[2]](process.argv.slice(3)).then(() => process.exit(0), (e) => {
  console.log(JSON.stringify({ error: String(e), type: e.type || null }));
  process.exit(1);
});
