// Worker IDs from an environment variable (Kubernetes' pod index through the downward API):
// the core's messages, unchanged.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as sf from 'segflake'
import sfDefault from 'segflake'
import { assertThrowsCode } from './helpers.mjs'

const EXPECTED = 'expected a decimal worker ID 0..=1023, such as the pod index 3'

test('workerIdFromText: decimal values within the layout, typed errors otherwise', () => {
  assert.equal(sf.workerIdFromText('POD_INDEX', '3', 10), 3)
  assert.equal(sf.workerIdFromText('POD_INDEX', '007', 10), 7)
  assert.equal(sf.workerIdFromText('POD_INDEX', '65535', 16), 65535)
  assert.equal(sfDefault.workerIdFromText, sf.workerIdFromText)
  for (const text of [undefined, null]) {
    assert.throws(() => sf.workerIdFromText('POD_INDEX', text, 10), {
      name: 'InvalidArgumentError',
      code: 'INVALID_ARGUMENT',
      message: `invalid POD_INDEX: POD_INDEX is not set; ${EXPECTED}`,
    })
  }
  assert.throws(() => sf.workerIdFromText('POD_INDEX', 'web-3', 10), {
    code: 'INVALID_ARGUMENT',
    message: `invalid POD_INDEX: POD_INDEX="web-3" is not a decimal number; ${EXPECTED}`,
  })
  assertThrowsCode(() => sf.workerIdFromText('POD_INDEX', '', 10), 'INVALID_ARGUMENT', 'POD_INDEX is empty')
  assert.throws(() => sf.workerIdFromText('POD_INDEX', '8', 3), {
    name: 'WorkerIdOutOfRangeError',
    code: 'WORKER_ID_OUT_OF_RANGE',
    message: 'worker id 8 is out of range: the layout has 3 worker bits, so worker ids are 0..=7',
  })
  assertThrowsCode(() => sf.workerIdFromText('POD_INDEX', '1', 64), 'INVALID_ARGUMENT', 'workerBits')
  assertThrowsCode(() => sf.workerIdFromText(7, '1', 10), 'INVALID_ARGUMENT', 'name')
  assertThrowsCode(() => sf.workerIdFromText('POD_INDEX', 3, 10), 'INVALID_ARGUMENT', 'text')
})

test('workerIdFromEnv reads process.env', () => {
  const name = 'SEGFLAKE_TEST_POD_INDEX'
  try {
    process.env[name] = '12'
    assert.equal(sf.workerIdFromEnv(name, 10), 12)
    assert.equal(sfDefault.workerIdFromEnv(name, 10), 12)
    process.env[name] = '1024'
    assert.throws(() => sf.workerIdFromEnv(name, 10), { code: 'WORKER_ID_OUT_OF_RANGE' })
    assert.equal(sf.workerIdFromEnv(name, 11), 1024)
    delete process.env[name]
    assert.throws(() => sf.workerIdFromEnv(name, 10), {
      code: 'INVALID_ARGUMENT',
      message: `invalid ${name}: ${name} is not set; ${EXPECTED}`,
    })
    assertThrowsCode(() => sf.workerIdFromEnv(undefined, 10), 'INVALID_ARGUMENT', 'name')
  } finally {
    delete process.env[name]
  }
})
