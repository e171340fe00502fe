export function join(...parts) {
  return parts.join('/');
}
export default { join };
