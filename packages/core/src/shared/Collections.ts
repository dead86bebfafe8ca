/** Items grouped by key, groups and items in first-seen order. */
export const groupBy = <A>(items: ReadonlyArray<A>, key: (a: A) => string): ReadonlyArray<ReadonlyArray<A>> => {
  const groups = new Map<string, Array<A>>()
  for (const item of items) {
    const k = key(item)
    const group = groups.get(k)
    if (group === undefined) groups.set(k, [item])
    else group.push(item)
  }
  return [...groups.values()]
}
