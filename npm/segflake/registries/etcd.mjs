import cjs from './etcd.js'
export const { EtcdRegistry } = cjs
export default cjs
