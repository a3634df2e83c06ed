#!/usr/bin/python3
"""Real Kafka clients against moonmqd's Kafka listener, for test/e2e/kafka_e2e_test.cpp.

Each subcommand prints what it saw as JSON lines on stdout and exits non-zero when a client reports an error.
BOOTSTRAP is host:port, or a JSON object of librdkafka settings that holds bootstrap.servers (security.protocol,
sasl.mechanism, sasl.username, sasl.password, ssl.ca.location; kafka-python gets the same, translated).
  create BOOTSTRAP TOPIC PARTITIONS            confluent-kafka's AdminClient: CreateTopics (then a second create
                                               must fail with TOPIC_ALREADY_EXISTS)
  produce BOOTSTRAP TOPIC COUNT [SECONDS] [PARTITIONS]
                                               an idempotent librdkafka producer (acks=all): COUNT records spread
                                               over SECONDS, keys "k<i>", one header, CreateTime i, partition
                                               i % PARTITIONS (default 3); one line per ack
  consume BOOTSTRAP TOPIC PARTITIONS [IDLE]    librdkafka consumer, assign mode from the beginning, until idle for
                                               IDLE seconds (default 3)
  group BOOTSTRAP GROUP TOPIC IDLE [STOP] [HOW] [PROTOCOL]
                                               a librdkafka consumer in GROUP subscribed to TOPIC (session 6 s,
                                               heartbeat 1 s): commits synchronously every 10 records and when
                                               partitions are revoked; prints assignments, revocations and records;
                                               ends when idle for IDLE seconds after its first record, or after STOP
                                               records (0: never) by HOW: close (leaves the group) or crash (exits
                                               at once, no leave, no commit); PROTOCOL: partition.assignment.strategy
  kafka-python-group BOOTSTRAP GROUP TOPIC IDLE
                                               the same with kafka-python's KafkaConsumer (auto commit)
  raw-group HOST:PORT GROUP TOPIC              JoinGroup/SyncGroup/Heartbeat/OffsetCommit v2 written by hand: a
                                               member id required, a stale generation, an unknown member, a
                                               member-less commit; prints each answer's error code
  kafka-python BOOTSTRAP TOPIC                 kafka-python: its version probe, a produce and a read back
  raw-batches HOST:PORT TOPIC PARTITION        Produce v3 requests written by hand (kafka-python's batch builder):
                                               a batch with a bad CRC, one with the control bit, then a good one;
                                               prints each answer's error code
  raw-sasl-pipeline HOST:PORT CAFILE TOPIC USER PASSWORD
                                               SaslHandshake, SaslAuthenticate (PLAIN) and a Produce of a 100 KiB
                                               record, in one write (over TLS trusting CAFILE; "-": plain): the
                                               produce is read only after the authentication, under the larger
                                               limit; prints each answer's error code
  txn-copy BOOTSTRAP IN OUT GROUP TXN COUNT EVERY ABORT [IDLE]
                                               exactly once: a read_committed consumer in GROUP reads IN, a
                                               transactional producer (id TXN) writes each record to OUT (same
                                               partition and key, value "copy:" + value) and sends the consumer's
                                               offsets with the transaction; it commits every EVERY records and
                                               aborts every ABORT-th transaction on purpose (rewinding to where it
                                               began); on an abortable error it aborts and rewinds too; ends when
                                               COUNT records were committed, or after IDLE s without a record
  txn-zombie BOOTSTRAP TOPIC TXN              two transactional producers with one id: the second's init fences
                                               the first, whose open transaction is aborted and whose commit fails
  raw-txn HOST:PORT TOPIC                      InitProducerId, AddPartitionsToTxn, TxnOffsetCommit and EndTxn
                                               written by hand: a timeout past the maximum, an unknown id, an
                                               unknown topic, stale epochs; prints each answer's error code
  admin BOOTSTRAP TOPIC                        confluent-kafka's AdminClient on an existing TOPIC: topic configs
                                               refused at create, CreatePartitions (grow, then a shrink refused),
                                               DescribeConfigs of the topic and of a broker, DeleteTopics, then
                                               explicit replica assignments (TOPIC-placed)
"""
import json
import sys
import time


def settings(bootstrap):
    """librdkafka settings from BOOTSTRAP."""
    if bootstrap.startswith('{'):
        return json.loads(bootstrap)
    return {'bootstrap.servers': bootstrap}


def kafka_python_settings(bootstrap):
    """The same settings as kafka-python's keyword arguments."""
    names = {'bootstrap.servers': 'bootstrap_servers', 'security.protocol': 'security_protocol',
             'sasl.mechanism': 'sasl_mechanism', 'sasl.username': 'sasl_plain_username',
             'sasl.password': 'sasl_plain_password', 'ssl.ca.location': 'ssl_cafile'}
    out = {names[k]: v for k, v in settings(bootstrap).items()}
    if 'ssl_cafile' in out:
        out['ssl_check_hostname'] = False
    return out


def create(bootstrap, topic, partitions):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient(settings(bootstrap))
    for attempt in range(2):
        fs = admin.create_topics([NewTopic(topic, num_partitions=int(partitions), replication_factor=1)])
        try:
            fs[topic].result(15)
            print(json.dumps({'created': topic, 'attempt': attempt}))
        except Exception as e:  # the second attempt must be refused
            print(json.dumps({'refused': topic, 'attempt': attempt, 'error': str(e)}))
            if attempt == 0:
                return 1
    return 0


def produce(bootstrap, topic, count, seconds='0', partitions='3'):
    from confluent_kafka import Producer
    p = Producer(dict(settings(bootstrap), **{'enable.idempotence': True, 'acks': 'all', 'linger.ms': 5,
                                               'message.timeout.ms': 60000}))
    count, seconds = int(count), float(seconds)
    failed = []

    def done(err, msg):
        if err:
            failed.append(str(err))
            return
        print(json.dumps({'partition': msg.partition(), 'offset': msg.offset(), 'key': msg.key().decode()}),
              flush=True)

    start = time.time()
    for i in range(count):
        p.produce(topic, key='k%d' % i, value='value-%d' % i, headers=[('h', b'x%d' % i)], timestamp=1000 + i,
                  partition=i % int(partitions), on_delivery=done)
        p.poll(0)
        if seconds:
            wait = start + seconds * (i + 1) / count - time.time()
            if wait > 0:
                time.sleep(wait)
    left = p.flush(60)
    if failed or left:
        print(json.dumps({'failed': failed[:5], 'unflushed': left}), flush=True)
        return 1
    return 0


def consume(bootstrap, topic, partitions, idle='3'):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(dict(settings(bootstrap), **{'group.id': 'unused', 'enable.auto.commit': False}))
    c.assign([TopicPartition(topic, p, 0) for p in range(int(partitions))])
    idle_since = time.time()
    while time.time() - idle_since < float(idle):
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            print(json.dumps({'error': str(m.error())}))
            return 1
        idle_since = time.time()
        print(json.dumps({'partition': m.partition(), 'offset': m.offset(), 'key': m.key().decode(),
                          'value': m.value().decode(), 'headers': [[k, v.decode()] for k, v in m.headers() or []],
                          'timestamp': m.timestamp()[1]}))
    c.close()
    return 0


def group(bootstrap, group_id, topic, idle, stop='0', how='close', protocol='range,roundrobin'):
    from confluent_kafka import Consumer, KafkaException
    import os
    c = Consumer(dict(settings(bootstrap), **{
        'group.id': group_id, 'enable.auto.commit': False, 'auto.offset.reset': 'earliest',
        'session.timeout.ms': 6000, 'heartbeat.interval.ms': 1000, 'partition.assignment.strategy': protocol}))
    cooperative = protocol == 'cooperative-sticky'

    def commit():
        try:
            c.commit(asynchronous=False)
        except KafkaException as e:
            if e.args[0].code() != -168:  # _NO_OFFSET: nothing consumed since the last commit
                print(json.dumps({'commit_error': str(e)}), flush=True)

    def assigned(consumer, partitions):
        print(json.dumps({'assigned': sorted(p.partition for p in partitions)}), flush=True)
        if cooperative:
            consumer.incremental_assign(partitions)

    def revoked(consumer, partitions):
        commit()
        print(json.dumps({'revoked': sorted(p.partition for p in partitions)}), flush=True)
        if cooperative:
            consumer.incremental_unassign(partitions)

    c.subscribe([topic], on_assign=assigned, on_revoke=revoked)
    seen, since_commit, idle_since = 0, 0, None
    while idle_since is None or time.time() - idle_since < float(idle):
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            print(json.dumps({'error': str(m.error())}), flush=True)
            continue
        idle_since = time.time()
        seen += 1
        since_commit += 1
        print(json.dumps({'partition': m.partition(), 'offset': m.offset(), 'key': m.key().decode()}), flush=True)
        if since_commit >= 10:
            commit()
            since_commit = 0
        if int(stop) and seen >= int(stop):
            if how == 'crash':
                os._exit(0)
            break
    commit()
    c.close()
    return 0


def kafka_python_group(bootstrap, group_id, topic, idle):
    from kafka import KafkaConsumer
    c = KafkaConsumer(topic, group_id=group_id, auto_offset_reset='earliest', enable_auto_commit=True,
                      auto_commit_interval_ms=500, session_timeout_ms=6000, heartbeat_interval_ms=1000,
                      consumer_timeout_ms=int(float(idle) * 1000), **kafka_python_settings(bootstrap))
    for m in c:
        print(json.dumps({'partition': m.partition, 'offset': m.offset, 'key': m.key.decode()}), flush=True)
    c.commit()
    c.close()
    return 0


def raw_connection(address, timeout=10):
    """A connection for requests written by hand: string(v) encodes a STRING (None: null), call(key, version, body)
    sends one request (header v1, client id "raw") and returns its answer without the correlation id."""
    import socket
    import struct
    host, port = address.rsplit(':', 1)
    s = socket.create_connection((host, int(port)), timeout=timeout)
    correlation = [0]

    def string(v):
        if v is None:
            return struct.pack('>h', -1)
        b = v.encode()
        return struct.pack('>h', len(b)) + b

    def call(key, version, body):
        correlation[0] += 1
        header = struct.pack('>hhi', key, version, correlation[0]) + string('raw')
        frame = header + body
        s.sendall(struct.pack('>i', len(frame)) + frame)
        size = struct.unpack('>i', s.recv(4, socket.MSG_WAITALL))[0]
        data = s.recv(size, socket.MSG_WAITALL)
        return data[4:]  # the correlation id

    return string, call


def raw_group(address, group_id, topic):
    import struct
    string, call = raw_connection(address)

    subscription = struct.pack('>hi', 0, 1) + string(topic) + struct.pack('>i', 0)

    def join(member):
        body = string(group_id) + struct.pack('>ii', 6000, 6000) + string(member) + string('consumer')
        body += struct.pack('>i', 1) + string('range') + struct.pack('>i', len(subscription)) + subscription
        data = call(11, 4, body)  # JoinGroup v4: throttle, error, generation, protocol, leader, member
        _, error, generation = struct.unpack('>ihi', data[:10])
        at = 10
        fields = []
        for _ in range(3):
            n = struct.unpack('>h', data[at:at + 2])[0]
            fields.append(data[at + 2:at + 2 + n].decode())
            at += 2 + n
        return error, generation, fields[1], fields[2]

    def sync(member, generation):
        data = call(14, 2, string(group_id) + struct.pack('>i', generation) + string(member) + struct.pack('>i', 0))
        return struct.unpack('>ih', data[:6])[1]

    def assigned_partitions(member, generation):
        # SyncGroup v2: throttle, error, assignment bytes = version, [topic [partition]], user data
        data = call(14, 2, string(group_id) + struct.pack('>i', generation) + string(member) + struct.pack('>i', 0))
        if len(data) < 16 or struct.unpack('>i', data[12:16])[0] == 0:
            return 0
        at = 18 + struct.unpack('>h', data[16:18])[0]
        return struct.unpack('>i', data[at:at + 4])[0]

    def heartbeat(member, generation):
        data = call(12, 2, string(group_id) + struct.pack('>i', generation) + string(member))
        return struct.unpack('>ih', data[:6])[1]

    def commit(member, generation, partition, offset, metadata=None):
        body = string(group_id) + struct.pack('>i', generation) + string(member) + struct.pack('>q', -1)
        body += struct.pack('>i', 1) + string(topic) + struct.pack('>iiq', 1, partition, offset)
        body += string(metadata) if metadata is not None else struct.pack('>h', -1)
        data = call(8, 2, body)  # OffsetCommit v2: topics [name [index error]]
        at = 4 + 2 + len(topic.encode()) + 4
        return struct.unpack('>ih', data[at:at + 6])[1]

    out = {}
    error, generation, leader, member = join('')
    out['first_join'] = error
    error, generation, leader, member = join(member)
    out['join'] = error
    out['leader_is_member'] = leader == member
    out['sync'] = sync(member, generation)
    # The partitions are handed once their owners cleared them, each when its own owner has: heartbeat (rejoining
    # when told to) until all three are held, so that the commits below are a member's commits of its partitions.
    deadline = time.time() + 20
    while assigned_partitions(member, generation) < 3 and time.time() < deadline:
        if heartbeat(member, generation) == 27:
            error, generation, leader, member = join(member)
        else:
            time.sleep(0.2)
    out['heartbeat'] = heartbeat(member, generation)
    out['commit'] = commit(member, generation, 0, 0)
    out['commits_elsewhere'] = [commit(member, generation, p, 0, 'meta-%d' % p) for p in (1, 2)]

    def fetch_all():  # OffsetFetch v2 with null topics: every partition the group committed
        data = call(9, 2, string(group_id) + struct.pack('>i', -1))
        seen, at = [], 0  # (v2 has no throttle time)
        topics = struct.unpack('>i', data[at:at + 4])[0]
        at += 4
        for _ in range(topics):
            n = struct.unpack('>h', data[at:at + 2])[0]
            name = data[at + 2:at + 2 + n].decode()
            partitions = struct.unpack('>i', data[at + 2 + n:at + 6 + n])[0]
            at += 6 + n
            for _ in range(partitions):
                index, offset, m = struct.unpack('>iqh', data[at:at + 14])
                metadata = data[at + 14:at + 14 + max(m, 0)].decode()
                at += 14 + max(m, 0) + 2  # metadata, error
                seen.append([name, index, offset, metadata])
        return seen
    out['fetch_all'] = fetch_all()
    out['stale_heartbeat'] = heartbeat(member, generation - 1)
    out['stale_commit'] = commit(member, generation - 1, 0, 0)
    out['unknown_member_commit'] = commit('nobody', generation, 0, 0)
    out['memberless_commit'] = commit('', -1, 0, 0)
    out['unknown_member_sync'] = sync('nobody', generation)
    data = call(13, 0, string(group_id) + string(member))  # LeaveGroup v0
    out['leave'] = struct.unpack('>h', data[:2])[0]
    out['heartbeat_after_leave'] = heartbeat(member, generation)
    print(json.dumps(out))
    return 0


def raw_txn(address, topic):
    import struct
    string, call = raw_connection(address, timeout=30)

    def init(txn_id, timeout):
        data = call(22, 1, string(txn_id) + struct.pack('>i', timeout))  # throttle, error, producer id, epoch
        _, error, pid, epoch = struct.unpack('>ihqh', data[:16])
        return error, pid, epoch

    def producer(txn_id, pid, epoch):
        return string(txn_id) + struct.pack('>qh', pid, epoch)

    def add_partitions(txn_id, pid, epoch, topics):
        body = producer(txn_id, pid, epoch) + struct.pack('>i', len(topics))
        for name, partitions in topics:
            body += string(name) + struct.pack('>i', len(partitions))
            for p in partitions:
                body += struct.pack('>i', p)
        data = call(24, 1, body)  # throttle, results [name results [index error]]
        at, out = 8, {}
        for _ in range(struct.unpack('>i', data[4:8])[0]):
            n = struct.unpack('>h', data[at:at + 2])[0]
            name = data[at + 2:at + 2 + n].decode()
            at += 2 + n
            for _ in range(struct.unpack('>i', data[at:at + 4])[0]):
                index, error = struct.unpack('>ih', data[at + 4:at + 10])
                out['%s-%d' % (name, index)] = error
                at += 6
            at += 4
        return out

    def end(txn_id, pid, epoch, commit):
        return struct.unpack('>ih', call(26, 1, producer(txn_id, pid, epoch) + struct.pack('>b', commit))[:6])[1]

    def txn_offsets(txn_id, group, pid, epoch, partition, offset):
        body = string(txn_id) + string(group) + struct.pack('>qh', pid, epoch)
        body += struct.pack('>i', 1) + string(topic) + struct.pack('>iiqi', 1, partition, offset, -1) + string(None)
        data = call(28, 2, body)
        at = 4 + 4 + 2 + len(topic.encode()) + 4
        return struct.unpack('>ih', data[at:at + 6])[1]

    out = {}
    out['init_timeout_too_long'] = init('raw-txn', 3600 * 1000)[0]
    error, pid, epoch = init('raw-txn', 10000)
    out['init'] = error
    out['end_unknown_id'] = end('raw-txn-nobody', 5, 0, True)
    out['add_unknown_topic'] = add_partitions('raw-txn', pid, epoch, [(topic + '-nope', [0]), (topic, [0])])
    out['add'] = add_partitions('raw-txn', pid, epoch, [(topic, [0])])
    out['txn_offsets'] = txn_offsets('raw-txn', 'raw-group', pid, epoch, 0, 0)
    out['end_commit'] = end('raw-txn', pid, epoch, True)
    error2, pid2, epoch2 = init('raw-txn', 10000)
    out['second_init_epoch_bumped'] = error2 == 0 and pid2 == pid and epoch2 == epoch + 1
    out['add_stale_epoch'] = add_partitions('raw-txn', pid, epoch, [(topic, [0])])
    out['txn_offsets_stale_epoch'] = txn_offsets('raw-txn', 'raw-group', pid, epoch, 0, 0)
    out['end_stale_epoch'] = end('raw-txn', pid, epoch, True)
    out['produce_unknown_id'] = transactional_produce(address, topic, 'raw-txn-nobody', 5, 0)
    print(json.dumps(out), flush=True)
    return 0


def transactional_produce(address, topic, txn_id, pid, epoch):
    """A transactional batch for partition 0 of `topic`, written by hand (Produce v3), sent to the partition's leader
    as Metadata v1 names it; returns the partition's error code."""
    import struct
    from kafka.record.default_records import DefaultRecordBatchBuilder
    string, call = raw_connection(address, timeout=30)
    data = call(3, 1, struct.pack('>i', 1) + string(topic))  # Metadata v1
    at, hosts = 4, {}
    for _ in range(struct.unpack('>i', data[:4])[0]):
        node, n = struct.unpack('>ih', data[at:at + 6])
        host = data[at + 6:at + 6 + n].decode()
        at += 6 + n
        port, rack = struct.unpack('>ih', data[at:at + 6])
        at += 6 + max(rack, 0)
        hosts[node] = '%s:%d' % (host, port)
    at += 4 + 4  # controller, topic count
    _, n = struct.unpack('>hh', data[at:at + 4])
    at += 4 + n + 1 + 4  # error, name, is_internal, partition count
    leader = None
    while leader is None:
        _, index, node = struct.unpack('>hii', data[at:at + 10])
        at += 10
        for _ in range(2):  # replicas, isr
            at += 4 + 4 * struct.unpack('>i', data[at:at + 4])[0]
        if index == 0:
            leader = node
    string, call = raw_connection(hosts[leader], timeout=30)
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True, producer_id=pid,
                                  producer_epoch=epoch, base_sequence=0, batch_size=1 << 20)
    b.append(0, timestamp=7000, key=b'k', value=b'in no transaction', headers=[])
    records = bytes(b.build())
    body = (string(txn_id) + struct.pack('>hi', -1, 10000) + struct.pack('>i', 1) + string(topic) +
            struct.pack('>ii', 1, 0) + struct.pack('>i', len(records)) + records)
    data = call(0, 3, body)  # topics [name partitions [index error ...]]
    n, = struct.unpack('>h', data[4:6])
    return struct.unpack('>ih', data[6 + n + 4:6 + n + 10])[1]


def kafka_python(bootstrap, topic):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    p = KafkaProducer(acks='all', **kafka_python_settings(bootstrap))
    sent = p.send(topic, key=b'kp', value=b'from kafka-python', headers=[('src', b'kp')], partition=1,
                  timestamp_ms=4242).get(15)
    p.close()
    c = KafkaConsumer(consumer_timeout_ms=3000, auto_offset_reset='earliest', **kafka_python_settings(bootstrap))
    c.assign([TopicPartition(topic, 1)])
    c.seek(TopicPartition(topic, 1), sent.offset)
    for m in c:
        print(json.dumps({'offset': m.offset, 'key': m.key.decode(), 'value': m.value.decode(),
                          'headers': [[k, v.decode()] for k, v in m.headers], 'timestamp': m.timestamp}))
        break
    c.close()
    return 0


def raw_sasl_pipeline(address, cafile, topic, user, password):
    import socket
    import ssl
    import struct
    from kafka.record.default_records import DefaultRecordBatchBuilder

    def string(v):
        b = v.encode()
        return struct.pack('>h', len(b)) + b

    def request(key, version, correlation, body):
        frame = struct.pack('>hhi', key, version, correlation) + string('raw') + body
        return struct.pack('>i', len(frame)) + frame

    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    b.append(0, timestamp=7000, key=b'big', value=b'v' * (100 << 10), headers=[])
    records = bytes(b.build())
    token = b'\0' + user.encode() + b'\0' + password.encode()
    produce = (struct.pack('>hhi', -1, 1, 10000) + struct.pack('>i', 1) + string(topic) + struct.pack('>ii', 1, 0) +
               struct.pack('>i', len(records)) + records)
    data = (request(17, 1, 1, string('PLAIN')) + request(36, 0, 2, struct.pack('>i', len(token)) + token) +
            request(0, 3, 3, produce))
    host, port = address.rsplit(':', 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    if cafile != '-':
        context = ssl.create_default_context(cafile=cafile)
        context.check_hostname = False
        sock = context.wrap_socket(sock)
    sock.sendall(data)

    def exact(n):
        got = b''
        while len(got) < n:
            chunk = sock.recv(n - len(got))
            if not chunk:
                raise EOFError('the broker closed the connection')
            got += chunk
        return got

    for _ in range(3):
        size = struct.unpack('>i', exact(4))[0]
        answer = exact(size)
        correlation, = struct.unpack('>i', answer[:4])
        if correlation == 3:  # Produce v3: topics[1]{name, partitions[1]{index, error, ...}}
            name_size, = struct.unpack('>h', answer[8:10])
            error, = struct.unpack('>h', answer[10 + name_size + 4 + 4:10 + name_size + 4 + 6])
        else:  # SaslHandshake and SaslAuthenticate start with their error code
            error, = struct.unpack('>h', answer[4:6])
        print(json.dumps({'correlation': correlation, 'error': error}))
    return 0


def raw_batches(address, topic, partition):
    import socket
    import struct
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.util import calc_crc32c

    def batch(value):
        b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                      producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
        b.append(0, timestamp=7000, key=b'raw', value=value, headers=[])
        return bytearray(b.build())

    def recrc(b):
        b[17:21] = struct.pack('>I', calc_crc32c(bytes(b[21:])))
        return b

    bad_crc = batch(b'bad crc')
    bad_crc[-1] ^= 0xff  # the record's last byte changed, the CRC left as it was
    control = batch(b'control')
    control[22] |= 0x20
    control = recrc(control)
    good = batch(b'good raw batch')

    def string(s):
        s = s.encode()
        return struct.pack('>h', len(s)) + s

    host, port = address.split(':')
    sock = socket.create_connection((host, int(port)), timeout=10)
    for correlation, records in enumerate([bad_crc, control, good]):
        body = (struct.pack('>hhi', 0, 3, correlation) + string('raw') + struct.pack('>hhi', -1, -1, 10000) +
                struct.pack('>i', 1) + string(topic) + struct.pack('>ii', 1, int(partition)) +
                struct.pack('>i', len(records)) + bytes(records))
        sock.sendall(struct.pack('>i', len(body)) + body)
        size = struct.unpack('>i', sock.recv(4, socket.MSG_WAITALL))[0]
        answer = sock.recv(size, socket.MSG_WAITALL)
        got_correlation, = struct.unpack('>i', answer[:4])
        name_size, = struct.unpack('>h', answer[8:10])
        at = 10 + name_size + 4  # past the topic's name and the partition count
        index, error, offset = struct.unpack('>ihq', answer[at:at + 14])
        print(json.dumps({'correlation': got_correlation, 'partition': index, 'error': error, 'offset': offset}))
    return 0


def admin(bootstrap, topic):
    from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic
    a = AdminClient(settings(bootstrap))

    def outcome(future):
        try:
            future.result(15)
            return 'ok'
        except Exception as e:
            return str(e)

    print(json.dumps({'create_with_config': outcome(
        a.create_topics([NewTopic(topic + '-cfg', 1, 1, config={'retention.ms': '1000'})])[topic + '-cfg'])}))
    print(json.dumps({'grow': outcome(a.create_partitions([NewPartitions(topic, 5)])[topic])}))
    print(json.dumps({'shrink': outcome(a.create_partitions([NewPartitions(topic, 2)])[topic])}))
    md = a.list_topics(timeout=10)
    print(json.dumps({'partitions': len(md.topics[topic].partitions)}))
    resource = ConfigResource('topic', topic)
    configs = a.describe_configs([resource])[resource].result(15)
    print(json.dumps({'topic_configs': {k: v.value for k, v in configs.items()},
                      'read_only': all(v.is_read_only for v in configs.values())}))
    broker = ConfigResource('broker', str(md.controller_id))
    configs = a.describe_configs([broker])[broker].result(15)
    print(json.dumps({'broker_configs': {k: v.value for k, v in configs.items()}}))
    missing = ConfigResource('topic', topic + '-missing')
    print(json.dumps({'describe_missing': outcome(a.describe_configs([missing])[missing])}))
    print(json.dumps({'delete': outcome(a.delete_topics([topic])[topic])}))
    print(json.dumps({'delete_again': outcome(a.delete_topics([topic])[topic])}))
    print(json.dumps({'listed_after_delete': topic in a.list_topics(timeout=10).topics}))
    # Explicit replica assignments: each list's first broker owns the partition.
    placed = topic + '-placed'
    print(json.dumps({'placed': outcome(a.create_topics([NewTopic(placed, 3, replica_assignment=[[3, 1], [1, 2], [2, 3]])])[placed])}))
    grown = outcome(a.create_partitions([NewPartitions(placed, 4, replica_assignment=[[1, 3]])])[placed])
    partitions = a.list_topics(placed, timeout=10).topics[placed].partitions
    print(json.dumps({'grown': grown, 'leaders': [partitions[p].leader for p in sorted(partitions)]}))
    bad = topic + '-bad'
    print(json.dumps({'bad_assignment': outcome(a.create_topics([NewTopic(bad, 1, replica_assignment=[[99]])])[bad])}))
    return 0


def txn_copy(bootstrap, source, target, group_id, txn_id, count, every, abort_every, idle='20'):
    from confluent_kafka import Consumer, Producer, KafkaException, TopicPartition
    count, every, abort_every = int(count), int(every), int(abort_every)
    c = Consumer(dict(settings(bootstrap), **{
        'group.id': group_id, 'enable.auto.commit': False, 'auto.offset.reset': 'earliest',
        'isolation.level': 'read_committed', 'session.timeout.ms': 10000, 'heartbeat.interval.ms': 1000}))
    p = Producer(dict(settings(bootstrap), **{'transactional.id': txn_id, 'linger.ms': 5,
                                               'transaction.timeout.ms': 60000}))
    p.init_transactions(30)
    committed, transactions, aborted_on_purpose, aborted_on_error = 0, 0, 0, 0
    in_transaction = False
    started = {}  # partition -> the offset this transaction began reading it at
    pending = 0

    def rewind():
        for partition, offset in started.items():
            try:
                c.seek(TopicPartition(source, partition, offset))
            except KafkaException as e:  # no longer assigned: the next owner starts from the committed offset
                print(json.dumps({'seek_error': str(e.args[0])}), flush=True)

    def patiently(what, op):
        # A retriable error (a coordinator killed, a partition moving) leaves the call to be made again.
        for attempt in range(20):
            try:
                return op()
            except KafkaException as e:
                err = e.args[0]
                if not err.retriable() or err.txn_requires_abort() or err.fatal() or attempt == 19:
                    raise
                print(json.dumps({'retry': what, 'error': str(err)}), flush=True)
                time.sleep(0.5)

    def end_transaction():
        nonlocal committed, transactions, aborted_on_purpose, pending
        transactions += 1
        if abort_every and transactions % abort_every == 0:
            patiently('abort', lambda: p.abort_transaction(30))
            aborted_on_purpose += 1
            rewind()
            print(json.dumps({'aborted': pending}), flush=True)
        else:
            positions = c.position([TopicPartition(source, part) for part in started])
            patiently('send_offsets', lambda: p.send_offsets_to_transaction(positions, c.consumer_group_metadata(), 30))
            patiently('commit', lambda: p.commit_transaction(30))
            committed += pending
            print(json.dumps({'committed': pending, 'total': committed}), flush=True)
        started.clear()
        pending = 0

    def revoked(consumer, partitions):
        # What this member read and did not commit goes back to the group: its transaction is aborted.
        nonlocal pending, in_transaction, aborted_on_error
        print(json.dumps({'revoked': sorted(tp.partition for tp in partitions)}), flush=True)
        if in_transaction:
            patiently('abort', lambda: p.abort_transaction(30))
            aborted_on_error += 1
            in_transaction = False
        started.clear()
        pending = 0

    c.subscribe([source], on_revoke=revoked)
    idle_since = time.time()
    while committed < count and time.time() - idle_since < float(idle):
        m = c.poll(0.2)
        try:
            if m is None:
                if pending and in_transaction:
                    end_transaction()
                    in_transaction = False
                continue
            if m.error():
                print(json.dumps({'consumer_error': str(m.error())}), flush=True)
                continue
            idle_since = time.time()
            if not in_transaction:
                p.begin_transaction()
                in_transaction = True
            started.setdefault(m.partition(), m.offset())
            p.produce(target, key=m.key(), value=b'copy:' + m.value(), partition=m.partition())
            pending += 1
            if pending >= every:
                end_transaction()
                in_transaction = False
        except KafkaException as e:
            err = e.args[0]
            print(json.dumps({'txn_error': str(err), 'abortable': err.txn_requires_abort(),
                              'retriable': err.retriable(), 'fatal': err.fatal()}), flush=True)
            if err.fatal():
                return 1
            if in_transaction:
                patiently('abort', lambda: p.abort_transaction(30))
                aborted_on_error += 1
                rewind()
                started.clear()
                pending = 0
                in_transaction = False
    print(json.dumps({'done': committed, 'transactions': transactions, 'aborted_on_purpose': aborted_on_purpose,
                      'aborted_on_error': aborted_on_error}), flush=True)
    c.close()
    return 0 if committed >= count else 1


def txn_zombie(bootstrap, topic, txn_id):
    from confluent_kafka import Producer, KafkaException
    first = Producer(dict(settings(bootstrap), **{'transactional.id': txn_id}))
    first.init_transactions(30)
    first.begin_transaction()
    first.produce(topic, key='zombie', value='from the first producer', partition=0)
    first.flush(30)
    second = Producer(dict(settings(bootstrap), **{'transactional.id': txn_id}))
    second.init_transactions(30)
    try:
        first.produce(topic, key='zombie', value='after the fence', partition=0)
        first.commit_transaction(30)
        print(json.dumps({'zombie_commit': 'succeeded'}), flush=True)
    except KafkaException as e:
        print(json.dumps({'zombie_commit': 'failed', 'fatal': e.args[0].fatal(), 'error': str(e.args[0])}),
              flush=True)
    second.begin_transaction()
    second.produce(topic, key='live', value='from the second producer', partition=0)
    second.commit_transaction(30)
    print(json.dumps({'live_commit': 'succeeded'}), flush=True)
    return 0


if __name__ == '__main__':
    commands = {'create': create, 'produce': produce, 'consume': consume, 'kafka-python': kafka_python, 'admin': admin,
                'raw-batches': raw_batches, 'raw-sasl-pipeline': raw_sasl_pipeline, 'group': group, 'kafka-python-group': kafka_python_group,
                'raw-group': raw_group, 'txn-copy': txn_copy, 'txn-zombie': txn_zombie,
                'raw-txn': raw_txn}
    sys.exit(commands[sys.argv[1]](*sys.argv[2:]))
