// The local chain of the x402 tests and demo: hardhat's in-process network, served by `hardhat node`.
module.exports = { networks: { hardhat: { chainId: 31337, mining: { auto: true } } } };
