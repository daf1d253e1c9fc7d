// The local chain of the x402 tests and demo: hardhat's in-process network, served by `hardhat node`.
// Blocks may share a second: at more than a block a second, the chain's clock would otherwise run
// ahead of the wall's, and a payment's validBefore (now + 300 s) would expire on chain.
module.exports = { networks: { hardhat: { chainId: 31337, mining: { auto: true }, allowBlocksWithSameTimestamp: true } } };
